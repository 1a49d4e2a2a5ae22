function highlight(id) {
  const expr = "//li[@data-id='" + id + "']";
  const result = document.evaluate(expr, document, null, XPathResult.FIRST_ORDERED_NODE_TYPE, null);
  if (result.singleNodeValue) {
    result.singleNodeValue.classList.add('active');
  }
}

window.addEventListener('hashchange', () => highlight(location.hash.slice(1)));
