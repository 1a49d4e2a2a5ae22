function rememberSession(id) {
  document.cookie = "session=" + id + "; path=/; max-age=86400";
}

module.exports = { rememberSession };
