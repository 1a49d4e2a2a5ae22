import subprocess


def thumbnail(src, dst):
    subprocess.run(["bash", "-c", f"convert {src} -resize 200x200 {dst}"], check=True)
