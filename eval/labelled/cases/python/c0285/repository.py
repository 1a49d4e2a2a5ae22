import os

TMP = "/tmp/app-cache/"


def drop_entry(name):
    os.remove(TMP + name)
