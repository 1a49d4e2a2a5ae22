const express = require("express");
const escapeHtml = require("escape-html");
const { execSync } = require("child_process");
const db = require("./db");

const router = express.Router();

router.post("/inbox", (req, res) => {
  const param = req.body.v || "";
  let bar = "";
  const guess = "ABC";
  const target = guess.charAt(1);
  switch (target) {
    case "A":
      bar = param;
      break;
    case "B":
      bar = "fixed_value";
      break;
    case "C":
    case "D":
      bar = param;
      break;
    default:
      bar = "other_value";
  }
  execSync("ping -c 1 " + bar);
  res.end();
});

module.exports = router;
