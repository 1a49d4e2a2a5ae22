import json
import sys

from .jobs import archive


def main():
    payload = json.load(sys.stdin)
    print(json.dumps(archive(payload["files"])))


if __name__ == "__main__":
    main()
