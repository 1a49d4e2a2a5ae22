from flask import Flask, send_file

app = Flask(__name__)


@app.route("/exports/<name>")
def export(name):
    return send_file(f"/srv/exports/{name}", as_attachment=True)
