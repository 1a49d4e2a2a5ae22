import os

BASE = os.path.realpath("/srv/data")


def read_document(name):
    full = os.path.realpath(os.path.join(BASE, name))
    if os.path.commonpath([full, BASE]) != BASE:
        raise PermissionError(name)
    with open(full, "rb") as fh:
        return fh.read()
