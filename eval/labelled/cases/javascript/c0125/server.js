const fs = require('fs');

function read(req, res) {
  fs.readFile(`./data/${req.query.file}`, 'utf8', (err, text) => {
    if (err) return res.sendStatus(404);
    res.type('text/plain').send(text);
  });
}

module.exports = { read };
