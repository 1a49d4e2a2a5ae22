import DOMPurify from 'dompurify';

export function renderPreview(el, html) {
  el.innerHTML = DOMPurify.sanitize(html);
}
