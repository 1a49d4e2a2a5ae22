import html
import os
import sqlite3

import markupsafe
from flask import Flask, request

app = Flask(__name__)


@app.route("/handle_export", methods=["POST"])
def handle_export():
    param = request.form.get("v", "")
    bar = ""
    if len(param) > 3:
        bar = html.escape(param)
    else:
        bar = param
    return "<p>" + bar + "</p>"
