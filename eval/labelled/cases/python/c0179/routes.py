import subprocess


def uptime():
    return subprocess.run("uptime", shell=True, capture_output=True, text=True).stdout.strip()
