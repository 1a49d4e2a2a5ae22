const express = require('express');

const router = express.Router();

router.post('/login', async (req, res) => {
  const token = await req.app.locals.auth.login(req.body.user, req.body.password);
  res.cookie('token', token, { httpOnly: true, maxAge: 8 * 3600 * 1000 });
  res.json({ ok: true });
});

module.exports = router;
