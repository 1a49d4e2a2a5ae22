from html import escape

from flask import Flask, request

app = Flask(__name__)


@app.route("/hello")
def hello():
    name = request.args.get("name", "world")
    return f"<h1>Hello {escape(name)}</h1>"
