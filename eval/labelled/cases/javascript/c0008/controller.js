const express = require('express');
const mysql = require('mysql2/promise');

const router = express.Router();
const pool = mysql.createPool({ host: process.env.DB_HOST, user: 'app', database: 'app' });

router.get('/projects/:id', async (req, res) => {
  const [rows] = await pool.query('SELECT id, code FROM projects WHERE id = ?', [req.params.id]);
  res.json(rows[0] || null);
});

module.exports = router;
