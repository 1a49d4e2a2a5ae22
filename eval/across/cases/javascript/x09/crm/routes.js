const express = require("express");
const { search } = require("./contacts");

const router = express.Router();

router.get("/contacts", async (req, res) => {
  const rows = await search(req.query.name);
  res.json(rows);
});

module.exports = router;
