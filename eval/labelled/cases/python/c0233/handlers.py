import random
import string


def temporary_password(length=12):
    password = "".join(random.choices(string.ascii_letters + string.digits, k=length))
    return password
