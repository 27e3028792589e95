"""``python -m standins.hub_mirror --port 0 --host 127.0.0.1 [--token T ...] [--throttle B] [--hostile] [--tiny]
[--tree-page N]``:
serve the HF mirror (``--throttle``: at most B bytes per second per file body; ``--hostile``: with
the hostile repositories of ``standins.hub_mirror.hostile``; ``--tiny``: with the tiny real models
built in the cache, see ``devtools.tiny_models``).

The first stdout line is ``HF mirror listening on http://HOST:PORT``. Tokens accepted for gated
repositories: ``--token`` (repeatable), else ``HF_MIRROR_TOKENS`` (comma-separated), else
``hf_mirror_test_token``.
"""

from __future__ import annotations

import argparse
import os
import signal
import threading

from standins.hub_mirror import DEFAULT_TOKEN, start_mirror
from standins.hub_mirror.server import TREE_PAGE


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m standins.hub_mirror", description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--token", action="append", default=None, help="a token that opens gated repos")
    parser.add_argument(
        "--throttle",
        type=float,
        default=None,
        help="bytes per second of each file body (default: unthrottled)",
    )
    parser.add_argument("--hostile", action="store_true", help="also serve standins.hub_mirror.hostile")
    parser.add_argument("--tiny", action="store_true", help="also serve the tiny real models (built)")
    parser.add_argument(
        "--tree-page", type=int, default=TREE_PAGE, help="entries per page of a tree listing (default: 1000)"
    )
    args = parser.parse_args(argv)
    env_tokens = [t for t in os.environ.get("HF_MIRROR_TOKENS", "").split(",") if t.strip()]
    tokens = args.token or env_tokens or [DEFAULT_TOKEN]
    mirror = start_mirror(
        host=args.host,
        port=args.port,
        tokens=tokens,
        throttle=args.throttle,
        hostile=args.hostile,
        tree_page=args.tree_page,
        tiny=args.tiny,
    )
    print(f"HF mirror listening on {mirror.url}", flush=True)
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    signal.signal(signal.SIGINT, lambda *_: done.set())
    done.wait()
    mirror.stop()


if __name__ == "__main__":
    main()
