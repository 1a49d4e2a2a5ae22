const express = require('express');
const path = require('path');

const app = express();

app.get('/files/:name', (req, res) => {
  res.sendFile(path.join(__dirname, 'uploads', req.params.name));
});

module.exports = app;
