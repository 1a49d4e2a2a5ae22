from flask import Flask, make_response, request

app = Flask(__name__)


@app.route("/preview")
def preview():
    return make_response("<p>" + request.args.get("text", "") + "</p>")
