const { exec } = require("child_process");

function toPdf(file, cb) {
  exec("libreoffice --headless --convert-to pdf uploads/" + file, cb);
}

module.exports = { toPdf };
