const fs = require('fs');
const path = require('path');

function read(req, res) {
  const name = path.basename(req.query.file || '');
  fs.readFile(path.join(__dirname, 'data', name), 'utf8', (err, text) => {
    if (err) return res.sendStatus(404);
    res.type('text/plain').send(text);
  });
}

module.exports = { read };
