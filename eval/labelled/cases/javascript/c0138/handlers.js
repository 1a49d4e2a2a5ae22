const fs = require('fs');
const path = require('path');

function mailTemplate() {
  return fs.readFileSync(path.join(__dirname, 'templates', 'mail.html'), 'utf8');
}

module.exports = { mailTemplate };
