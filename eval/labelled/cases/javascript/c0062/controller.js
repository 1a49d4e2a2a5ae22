const child_process = require('child_process');

function log(branch, cb) {
  child_process.exec("git log --oneline " + branch, { cwd: '/srv/repo' }, cb);
}

module.exports = { log };
