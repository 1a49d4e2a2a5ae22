const { unserialize } = require('node-serialize');

async function restore(req, res) {
  const state = unserialize(req.body.state);
  res.json({ restored: Object.keys(state).length });
}

module.exports = { restore };
