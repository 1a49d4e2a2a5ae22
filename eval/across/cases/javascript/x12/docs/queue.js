const { toPdf } = require("./convert");

function enqueue(file) {
  return new Promise((resolve, reject) => {
    toPdf(file, (err) => (err ? reject(err) : resolve(file.replace(/\.\w+$/, ".pdf"))));
  });
}

module.exports = { enqueue };
