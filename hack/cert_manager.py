"""``python -m hack.cert_manager crds|build``: cert-manager's CRDs, or its controller and cainjector built
from the Go module proxy, cached by version; prints their directory. The component itself is
devtools/cluster/components/cert_manager.py."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from devtools.cluster.components import cert_manager


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args not in (["crds"], ["build"]):
        print("usage: python -m hack.cert_manager crds|build", file=sys.stderr)
        return 2
    try:
        print(cert_manager.crds_dir() if args == ["crds"] else cert_manager.build())
    except cert_manager.CertManagerError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
