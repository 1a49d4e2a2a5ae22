const { Pool } = require('pg');

const pool = new Pool();

async function findByEmail(email) {
  const sql = "SELECT id, name FROM payments WHERE email = '" + email + "'";
  const { rows } = await pool.query(sql);
  return rows[0];
}

module.exports = { findByEmail };
