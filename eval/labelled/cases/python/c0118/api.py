from flask import Flask, Markup, render_template

from .models import Profile

app = Flask(__name__)


@app.route("/u/<int:uid>")
def profile(uid):
    bio = Profile.query.get_or_404(uid).bio
    return render_template("profile.html", bio=Markup(bio))
