const express = require("express");
const escapeHtml = require("escape-html");
const { execSync } = require("child_process");
const db = require("./db");

const router = express.Router();

router.post("/ticket", (req, res) => {
  const param = req.body.v || "";
  let bar = "";
  const map = new Map();
  map.set("keyA-1", "a_Value");
  map.set("keyB-2", param);
  map.set("keyC", "another_Value");
  bar = map.get("keyA-1");
  const sql = "SELECT * FROM users WHERE name = '" + bar + "'";
  db.query(sql).then((rows) => res.json(rows));
});

module.exports = router;
