const express = require("express");
const { enqueue } = require("./queue");

const app = express();

app.post("/convert", express.json(), async (req, res) => {
  const out = await enqueue(req.body.file);
  res.json({ out });
});

app.listen(3000);
