const { execSync } = require('child_process');

function convert(file) {
  const cmd = "convert " + file + " -resize 50% out.png";
  return execSync(cmd).toString();
}

module.exports = { convert };
