function renderNotice(data) {
  $('#notice').html(data.message);
}

$.getJSON('/api/notice', renderNotice);
