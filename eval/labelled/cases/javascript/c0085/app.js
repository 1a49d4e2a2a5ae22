const { exec } = require('child_process');

function status(cb) {
  exec('git status --porcelain', { cwd: '/srv/repo' }, cb);
}

module.exports = { status };
