import html
import os
import sqlite3

import markupsafe
from flask import Flask, request

app = Flask(__name__)


@app.route("/handle_catalog", methods=["POST"])
def handle_catalog():
    param = request.form.get("v", "")
    bar = ""
    num = 86
    if (7 * 18) - num > 200:
        bar = "fixed_value"
    else:
        bar = param
    conn = sqlite3.connect("app.db")
    cur = conn.cursor()
    cur.execute("SELECT * FROM users WHERE name = '%s'" % bar)
    return "ok"
