from flask import Flask, make_response

app = Flask(__name__)


@app.route("/login", methods=["POST"])
def login():
    sid = app.sessions.create()
    resp = make_response({"ok": True})
    resp.set_cookie("session_id", sid, secure=True, httponly=True, samesite="Lax")
    return resp
