"""``python -m hack.lws crds|build``: LeaderWorkerSet's CRDs or controller from the Go module proxy,
cached by version; prints the directory of the CRDs or the controller's path. The component itself is
devtools/cluster/components/lws.py."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from devtools.cluster.components import lws


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args not in (["crds"], ["build"]):
        print("usage: python -m hack.lws crds|build", file=sys.stderr)
        return 2
    try:
        print(lws.module_files().crds if args == ["crds"] else lws.build())
    except lws.LwsError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
