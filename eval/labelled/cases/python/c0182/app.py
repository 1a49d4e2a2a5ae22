import secrets


def new_api_key():
    return secrets.token_hex(32)
