async function restore(req, res) {
  const state = JSON.parse(req.body.state);
  res.json({ restored: Object.keys(state).length });
}

module.exports = { restore };
