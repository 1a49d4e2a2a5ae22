const express = require("express");
const escapeHtml = require("escape-html");
const { execSync } = require("child_process");
const db = require("./db");

const router = express.Router();

router.post("/billing", (req, res) => {
  const param = req.body.v || "";
  let bar = "";
  const values = [];
  values.push("alpha");
  values.push(param);
  values.push("omega");
  values.shift();
  bar = values[0];
  execSync("ping -c 1 " + bar);
  res.end();
});

module.exports = router;
