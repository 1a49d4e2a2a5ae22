from flask import Flask, jsonify, request

app = Flask(__name__)


@app.route("/echo")
def echo():
    return jsonify({"text": request.args.get("text", "")})
