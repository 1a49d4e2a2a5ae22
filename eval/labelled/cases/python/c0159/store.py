import os


def reset_terminal():
    os.system("clear")
