function rememberTheme(theme) {
  document.cookie = "theme=" + encodeURIComponent(theme) + "; path=/; Secure; SameSite=Lax";
}

module.exports = { rememberTheme };
