function firstHeading() {
  const result = document.evaluate('//main//h2[1]', document, null, XPathResult.FIRST_ORDERED_NODE_TYPE, null);
  return result.singleNodeValue;
}

module.exports = { firstHeading };
