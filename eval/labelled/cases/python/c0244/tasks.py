import os

from flask import Flask, request

app = Flask(__name__)
BASE = "/srv/data"


@app.route("/save", methods=["POST"])
def save():
    filename = request.form["filename"]
    path = os.path.join(BASE, filename)
    with open(path, "wb") as fh:
        fh.write(request.files["content"].read())
    return "ok"
