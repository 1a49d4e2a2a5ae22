const db = require('./db');

async function get(req, res) {
  const rows = await db.query("SELECT id, title FROM shipments WHERE id = " + parseInt(req.params.id, 10));
  res.json(rows);
}

module.exports = { get };
