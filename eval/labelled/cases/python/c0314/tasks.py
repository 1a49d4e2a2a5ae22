import os


def folder_size(path):
    line = os.popen("du -sh " + path).read()
    return line.split()[0]
