const mysql = require("mysql");

const pool = mysql.createPool({ host: "db", user: "app", database: "crm" });

function contactsNamed(name, done) {
  pool.query("SELECT * FROM contacts WHERE name = '" + name + "'", done);
}

module.exports = { contactsNamed };
