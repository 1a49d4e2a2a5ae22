const { execSync } = require('child_process');

function revision() {
  return execSync(`git rev-parse HEAD`).toString().trim();
}

module.exports = { revision };
