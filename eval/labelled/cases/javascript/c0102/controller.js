const { sequelize } = require('../models');

async function list(req, res) {
  const rows = await sequelize.query("SELECT id, title FROM notes ORDER BY " + req.query.sort, {
    type: sequelize.QueryTypes.SELECT,
  });
  res.json(rows);
}

module.exports = { list };
