const knex = require('./db');

async function findByEmail(email) {
  return knex('customers').where({ email }).first('id', 'name');
}

module.exports = { findByEmail };
