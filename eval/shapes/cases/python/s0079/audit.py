import html
import os
import sqlite3

import markupsafe
from flask import Flask, request

app = Flask(__name__)


@app.route("/handle_audit", methods=["POST"])
def handle_audit():
    param = request.form.get("v", "")
    bar = ""
    mapping = {}
    mapping["keyA-1"] = "a_Value"
    mapping["keyB-2"] = param
    mapping["keyC"] = "another_Value"
    bar = mapping.get("keyA-1")
    conn = sqlite3.connect("app.db")
    cur = conn.cursor()
    cur.execute("SELECT * FROM users WHERE name = '%s'" % bar)
    return "ok"
