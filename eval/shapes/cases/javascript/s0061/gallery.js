const express = require("express");
const escapeHtml = require("escape-html");
const { execSync } = require("child_process");
const db = require("./db");

const router = express.Router();

router.post("/gallery", (req, res) => {
  const param = req.body.v || "";
  let bar = "";
  const num = 86;
  bar = (7 * 18) - num > 200 ? "fixed_value" : param;
  execSync("ping -c 1 " + bar);
  res.end();
});

module.exports = router;
