function loadPrefs(req, res, next) {
  if (req.cookies.prefs) {
    try {
      req.prefs = JSON.parse(Buffer.from(req.cookies.prefs, 'base64').toString());
    } catch (e) {
      req.prefs = {};
    }
  }
  next();
}

module.exports = { loadPrefs };
