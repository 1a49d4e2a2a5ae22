const crypto = require('crypto');

async function sendReset(user, mailer) {
  const resetCode = crypto.randomInt(100000, 1000000);
  await mailer.send(user.email, `Your reset code is ${resetCode}`);
  return resetCode;
}

module.exports = { sendReset };
