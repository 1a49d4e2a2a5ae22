const knex = require('./db');

async function searchByName(name) {
  const result = await knex.raw(`SELECT id, title FROM users WHERE name = '${name}'`);
  return result.rows;
}

module.exports = { searchByName };
