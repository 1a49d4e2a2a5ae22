const { Pool } = require('pg');

const pool = new Pool();

async function findByEmail(email) {
  const { rows } = await pool.query('SELECT id, name FROM articles WHERE email = $1', [email]);
  return rows[0];
}

module.exports = { findByEmail };
