const crypto = require('crypto');

function contentId(buf) {
  return crypto.createHash('sha256').update(buf).digest('hex');
}

module.exports = { contentId };
