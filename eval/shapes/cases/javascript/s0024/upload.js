const express = require("express");
const escapeHtml = require("escape-html");
const { execSync } = require("child_process");
const db = require("./db");

const router = express.Router();

router.post("/upload", (req, res) => {
  const param = req.body.v || "";
  let bar = "";
  bar = param;
  db.query("SELECT * FROM users WHERE name = ?", [bar]).then((rows) => res.json(rows));
});

module.exports = router;
