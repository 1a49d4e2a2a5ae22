from flask import abort, request

from .db import get_db


def name_of():
    try:
        user_id = int(request.args["id"])
    except (KeyError, ValueError):
        abort(400)
    row = get_db().execute("SELECT name FROM employees WHERE id = %d" % user_id).fetchone()
    return row[0] if row else ""
