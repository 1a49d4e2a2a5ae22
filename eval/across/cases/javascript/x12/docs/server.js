const express = require("express");
const { enqueue } = require("./queue");

const app = express();

app.post("/convert", express.json(), async (req, res) => {
  const file = require("path").basename(String(req.body.file || ""));
  if (!/^[\w.-]+\.(docx|odt)$/.test(file)) {
    return res.status(400).json({ error: "unsupported file" });
  }
  const out = await enqueue(file);
  res.json({ out });
});

app.listen(3000);
