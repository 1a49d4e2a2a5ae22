const crypto = require('crypto');

function encrypt(key, iv, text) {
  const cipher = crypto.createCipheriv('des-ede3-cbc', key, iv);
  return Buffer.concat([cipher.update(text, 'utf8'), cipher.final()]).toString('base64');
}

module.exports = { encrypt };
