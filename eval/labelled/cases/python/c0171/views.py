import random
import string

_rng = random.SystemRandom()


def temporary_password(length=12):
    return "".join(_rng.choice(string.ascii_letters + string.digits) for _ in range(length))
