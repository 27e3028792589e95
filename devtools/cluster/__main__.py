"""``python -m devtools.cluster up|down|status|env``."""

from __future__ import annotations

import shutil
import sys

from devtools.cluster import config, launcher


def main(argv: list[str]) -> int:
    cmd = argv[0] if argv else "status"
    if cmd == "up":
        launcher.up()
        return 0
    if cmd == "down":
        launcher.down()
        if "--purge" in argv:
            shutil.rmtree(config.STATE, ignore_errors=True)
        return 0
    if cmd == "status":
        return launcher.status()
    if cmd == "env":
        print(f"export KUBECONFIG={config.P.kubeconfig}")
        return 0
    print("usage: python -m devtools.cluster up|down [--purge]|status|env", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
