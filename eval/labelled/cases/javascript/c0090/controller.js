const express = require('express');
const path = require('path');

const app = express();

app.get('/files/:name', (req, res) => {
  res.sendFile(req.params.name, { root: path.join(__dirname, 'uploads') });
});

module.exports = app;
