import random


def send_verification(user, mailer):
    reset_code = random.randint(100000, 999999)
    mailer.send(user.email, f"Your code is {reset_code}")
    return reset_code
