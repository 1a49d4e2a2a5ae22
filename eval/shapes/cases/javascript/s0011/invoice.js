const express = require("express");
const escapeHtml = require("escape-html");
const { execSync } = require("child_process");
const db = require("./db");

const router = express.Router();

router.post("/invoice", (req, res) => {
  const param = req.body.v || "";
  let bar = "";
  bar = param;
  bar = bar.trim();
  const sql = "SELECT * FROM users WHERE name = '" + bar + "'";
  db.query(sql).then((rows) => res.json(rows));
});

module.exports = router;
