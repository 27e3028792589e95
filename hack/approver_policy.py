"""``python -m hack.approver_policy crds|build``: approver-policy's CRD directory, or its controller
built from the Go module proxy (cached by version); prints the path. The component itself is
devtools/cluster/components/approver_policy.py."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from devtools.cluster.components import approver_policy


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args not in (["crds"], ["build"]):
        print("usage: python -m hack.approver_policy crds|build", file=sys.stderr)
        return 2
    try:
        print(approver_policy.crds_dir() if args == ["crds"] else approver_policy.build())
    except approver_policy.ApproverPolicyError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
