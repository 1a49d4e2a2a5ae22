from flask import jsonify, request
from sqlalchemy import text

from .app import app, db


@app.route("/tickets/by-email")
def by_email():
    email = request.args.get("email", "")
    result = db.session.execute(
        text("SELECT id, name FROM tickets WHERE email = :email"), {"email": email}
    )
    return jsonify([dict(r._mapping) for r in result])
