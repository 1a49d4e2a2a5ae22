const express = require("express");
const escapeHtml = require("escape-html");
const { execSync } = require("child_process");
const db = require("./db");

const router = express.Router();

router.post("/catalog", (req, res) => {
  const param = req.body.v || "";
  let bar = "";
  if (param.length > 3) {
    bar = escapeHtml(param);
  } else {
    bar = escapeHtml(param.slice(0, 3));
  }
  res.send("<p>" + bar + "</p>");
});

module.exports = router;
