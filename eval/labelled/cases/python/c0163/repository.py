import shlex
import subprocess


def listing(path):
    out = subprocess.run(f"ls -l {shlex.quote(path)}", shell=True, capture_output=True, text=True)
    return out.stdout
