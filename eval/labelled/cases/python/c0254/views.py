from flask import Flask, send_from_directory

app = Flask(__name__)


@app.route("/exports/<name>")
def export(name):
    return send_from_directory("/srv/exports", name, as_attachment=True)
