import html
import os
import sqlite3

import markupsafe
from flask import Flask, request

app = Flask(__name__)


@app.route("/handle_notify", methods=["POST"])
def handle_notify():
    param = request.form.get("v", "")
    bar = ""
    num = 86
    bar = "fixed_value" if (7 * 18) - num > 200 else param
    os.system("ping -c 1 " + bar)
    return "ok"
