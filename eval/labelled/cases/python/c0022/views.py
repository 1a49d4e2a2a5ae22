import base64
import pickle


def session_from_cookie(cookie_value):
    raw = base64.b64decode(cookie_value)
    return pickle.loads(raw)
