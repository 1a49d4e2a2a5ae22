const { contactsNamed } = require("./db");

function search(name) {
  return new Promise((resolve, reject) => {
    contactsNamed(name, (err, rows) => (err ? reject(err) : resolve(rows)));
  });
}

module.exports = { search };
