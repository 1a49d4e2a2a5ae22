from flask import Flask, jsonify, request

from .db import get_db

app = Flask(__name__)


@app.route("/users/search")
def search():
    term = request.args.get("q", "")
    query = "SELECT id, title FROM users WHERE title LIKE '%%%s%%'" % term
    rows = get_db().execute(query).fetchall()
    return jsonify([dict(r) for r in rows])
