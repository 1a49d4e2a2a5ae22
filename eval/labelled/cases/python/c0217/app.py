import hashlib


def content_id(data):
    return hashlib.sha256(data).hexdigest()
