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
    bar = param
    conn = sqlite3.connect("app.db")
    cur = conn.cursor()
    cur.execute("SELECT * FROM users WHERE name = ?", (bar,))
    return "ok"
