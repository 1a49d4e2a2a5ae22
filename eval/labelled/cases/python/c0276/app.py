import hashlib
import hmac


def sign(secret, message):
    return hmac.new(secret, message, hashlib.sha1).hexdigest()


def token_digest(token):
    return hashlib.sha1(token.encode()).hexdigest()
