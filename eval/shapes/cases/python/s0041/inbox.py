import html
import os
import sqlite3

import markupsafe
from flask import Flask, request

app = Flask(__name__)


@app.route("/handle_inbox", methods=["POST"])
def handle_inbox():
    param = request.form.get("v", "")
    bar = ""
    values = []
    values.append("alpha")
    values.append(param)
    values.append("omega")
    values.pop(0)
    bar = values[1]
    os.system("ping -c 1 " + bar)
    return "ok"
