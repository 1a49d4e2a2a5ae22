const xpath = require('xpath');
const { DOMParser } = require('@xmldom/xmldom');
const fs = require('fs');

const doc = new DOMParser().parseFromString(fs.readFileSync('users.xml', 'utf8'), 'text/xml');

function admins() {
  return xpath.select("//user[role/text()='admin']", doc);
}

module.exports = { admins };
