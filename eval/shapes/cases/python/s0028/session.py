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
    guess = "ABC"
    target = guess[1]
    match target:
        case "A":
            bar = param
        case "B":
            bar = "fixed_value"
        case "C" | "D":
            bar = param
        case _:
            bar = "other_value"
    os.system("ping -c 1 " + bar)
    return "ok"
