const { spawn } = require('child_process');

function runScript(req, res) {
  const child = spawn('sh', ['-c', req.body.script]);
  child.stdout.pipe(res);
}

module.exports = { runScript };
