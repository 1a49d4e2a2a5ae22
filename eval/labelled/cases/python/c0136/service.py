import base64
import hmac
import json
import hashlib

KEY = b"loaded-from-settings"


def session_from_cookie(cookie_value):
    payload, sig = cookie_value.rsplit(".", 1)
    expected = hmac.new(KEY, payload.encode(), hashlib.sha256).hexdigest()
    if not hmac.compare_digest(expected, sig):
        raise ValueError("signature")
    return json.loads(base64.b64decode(payload))
