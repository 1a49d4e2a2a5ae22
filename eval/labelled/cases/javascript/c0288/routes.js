const xpath = require('xpath');
const { DOMParser } = require('@xmldom/xmldom');
const fs = require('fs');

const doc = new DOMParser().parseFromString(fs.readFileSync('users.xml', 'utf8'), 'text/xml');

function findUser(name) {
  return xpath.select(`//user[name/text()='${name}']`, doc);
}

module.exports = { findUser };
