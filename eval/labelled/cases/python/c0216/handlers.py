import subprocess


def resolve(domain):
    out = subprocess.check_output(f"nslookup {domain}", shell=True)
    return out.decode()
