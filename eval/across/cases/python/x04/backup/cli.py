import json
import re
import sys

from .jobs import archive

SAFE = re.compile(r"^[A-Za-z0-9_.-]+$")


def main():
    payload = json.load(sys.stdin)
    names = [n for n in payload["files"] if SAFE.fullmatch(n) and not n.startswith(".")]
    print(json.dumps(archive(names)))


if __name__ == "__main__":
    main()
