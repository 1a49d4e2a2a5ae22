import os

from flask import Flask, request, send_file
from werkzeug.utils import secure_filename

app = Flask(__name__)
UPLOAD_DIR = "/srv/uploads"


@app.route("/download")
def download():
    name = secure_filename(request.args["name"])
    return send_file(os.path.join(UPLOAD_DIR, name))
