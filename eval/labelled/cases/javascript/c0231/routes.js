function randomString(len) {
  let s = '';
  while (s.length < len) {
    s += Math.random().toString(36).slice(2);
  }
  return s.slice(0, len);
}

function issueInvite(db, email) {
  return db.invites.insert({ email, code: randomString(20) });
}

module.exports = { issueInvite };
