const serialize = require('node-serialize');

function loadPrefs(req, res, next) {
  if (req.cookies.prefs) {
    const raw = Buffer.from(req.cookies.prefs, 'base64').toString();
    req.prefs = serialize.unserialize(raw);
  }
  next();
}

module.exports = { loadPrefs };
