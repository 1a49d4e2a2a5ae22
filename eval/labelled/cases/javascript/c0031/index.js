function showMessage() {
  const params = new URLSearchParams(window.location.search);
  const box = document.getElementById('message');
  box.innerHTML = params.get('msg');
}

document.addEventListener('DOMContentLoaded', showMessage);
