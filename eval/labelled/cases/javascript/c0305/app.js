const { spawn } = require('child_process');

function resize(src, dst) {
  return new Promise((resolve, reject) => {
    const child = spawn('convert', [src, '-resize', '200x200', dst]);
    child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`convert exited ${code}`))));
  });
}

module.exports = { resize };
