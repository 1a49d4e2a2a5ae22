function wobble(el) {
  const dx = (Math.random() - 0.5) * 8;
  el.style.transform = `translateX(${dx}px)`;
}

module.exports = { wobble };
