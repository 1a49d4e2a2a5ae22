import subprocess

DISK_CMD = "df -h /"


def disk_report():
    cmd = DISK_CMD
    return subprocess.run(cmd, shell=True, capture_output=True, text=True).stdout
