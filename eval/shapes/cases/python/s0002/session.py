import html
import os
import sqlite3

import markupsafe
from flask import Flask, request

app = Flask(__name__)


@app.route("/handle_session", methods=["POST"])
def handle_session():
    param = request.form.get("v", "")
    bar = ""
    bar = param
    bar = bar.strip()
    conn = sqlite3.connect("app.db")
    cur = conn.cursor()
    cur.execute("SELECT * FROM users WHERE name = '%s'" % bar)
    return "ok"
