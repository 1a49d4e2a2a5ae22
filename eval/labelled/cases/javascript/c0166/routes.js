const db = require('./db');

async function show(req, res) {
  const comment = await db.comments.find(req.params.id);
  res.send("<article>" + comment.body + "</article>");
}

module.exports = { show };
