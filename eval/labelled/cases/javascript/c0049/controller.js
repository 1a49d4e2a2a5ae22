const mailer = require('./mailer');

async function sendReset(user) {
  const resetCode = Math.floor(100000 + Math.random() * 900000);
  await mailer.send(user.email, `Your reset code is ${resetCode}`);
  return resetCode;
}

module.exports = { sendReset };
