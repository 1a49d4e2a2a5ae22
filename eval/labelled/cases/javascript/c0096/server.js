const express = require('express');

const app = express();
app.set('view engine', 'pug');

app.get('/search', (req, res) => {
  res.render('search', { q: req.query.q });
});

module.exports = app;
