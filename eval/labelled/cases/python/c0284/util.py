import random
import string

ALPHABET = string.ascii_letters + string.digits


def new_api_key():
    return "".join(random.choice(ALPHABET) for _ in range(40))
