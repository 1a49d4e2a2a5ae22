const express = require("express");
const { search } = require("./contacts");

const router = express.Router();

router.get("/contacts", async (req, res) => {
  const name = String(req.query.name || "");
  if (!/^[\w ]{1,64}$/.test(name)) {
    return res.status(400).json({ error: "bad name" });
  }
  const rows = await search(name);
  res.json(rows);
});

module.exports = router;
