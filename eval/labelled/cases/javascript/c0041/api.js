const fs = require('fs');
const path = require('path');

const ROOT = '/srv/attachments';

function stream(req, res) {
  const name = req.body.attachment;
  const full = path.join(ROOT, name);
  fs.createReadStream(full).pipe(res);
}

module.exports = { stream };
