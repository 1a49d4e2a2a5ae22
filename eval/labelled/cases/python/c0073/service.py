from flask import Flask, request

app = Flask(__name__)


@app.route("/tags")
def tags():
    items = request.args.getlist("tag")
    html = "<ul>" + "".join(f"<li>{t}</li>" for t in items) + "</ul>"
    return html
