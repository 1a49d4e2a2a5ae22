import html
import os
import sqlite3

import markupsafe
from flask import Flask, request

app = Flask(__name__)


@app.route("/handle_search", methods=["POST"])
def handle_search():
    param = request.form.get("v", "")
    bar = ""
    if len(param) > 3:
        bar = html.escape(param)
    else:
        bar = markupsafe.escape(param)
    return "<p>" + bar + "</p>"
