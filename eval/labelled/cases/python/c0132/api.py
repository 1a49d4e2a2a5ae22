import hashlib


def store_password(db, user, password):
    digest = hashlib.md5(password.encode()).hexdigest()
    db.execute("UPDATE users SET password_hash = ? WHERE name = ?", (digest, user))
