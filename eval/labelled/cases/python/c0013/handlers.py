import subprocess


def archive(src, out):
    cmd = "tar czf %s %s" % (out, src)
    proc = subprocess.Popen(cmd, shell=True, stdout=subprocess.PIPE)
    proc.wait()
    return proc.returncode
