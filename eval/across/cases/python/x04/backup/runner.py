import subprocess


def compress(name):
    return subprocess.run("gzip -k /var/backups/" + name, shell=True, check=True)
