const express = require("express");
const escapeHtml = require("escape-html");
const { execSync } = require("child_process");
const db = require("./db");

const router = express.Router();

router.post("/feed", (req, res) => {
  const param = req.body.v || "";
  let bar = "";
  const num = 86;
  if ((7 * 42) - num > 200) bar = "fixed_value";
  else bar = param;
  const sql = "SELECT * FROM users WHERE name = '" + bar + "'";
  db.query(sql).then((rows) => res.json(rows));
});

module.exports = router;
