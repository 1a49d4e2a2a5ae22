const postgres = require('postgres');

const sql = postgres(process.env.DATABASE_URL);

async function byOwner(owner) {
  return sql`SELECT id, title FROM comments WHERE owner = ${owner}`;
}

module.exports = { byOwner };
