"""``python -m standins.runtime --port 0 [--kubeconfig K] [--control-port 0]``.

The first stdout line is ``runtime stand-in listening on https://HOST:PORT (control http://HOST:PORT)``.
Without ``--kubeconfig`` (or ``KUBECONFIG``) it answers only orders registered on the control port.
"""

from __future__ import annotations

import argparse
import os
import signal
import threading

from standins.runtime import start_runtime
from standins.runtime.load import DEFAULT_DECODE_SECONDS, DEFAULT_QUEUE_LIMIT, DEFAULT_SLOTS


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m standins.runtime", description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--control-port", type=int, default=0)
    parser.add_argument("--kubeconfig", default=os.environ.get("KUBECONFIG"))
    parser.add_argument("--cache-seconds", type=float, default=2.0)
    parser.add_argument("--slots", type=int, default=DEFAULT_SLOTS, help="requests a pod runs at once")
    parser.add_argument(
        "--decode-seconds", type=float, default=DEFAULT_DECODE_SECONDS, help="how long a chat completion runs"
    )
    parser.add_argument(
        "--queue-limit", type=int, default=DEFAULT_QUEUE_LIMIT, help="requests waiting per pod"
    )
    args = parser.parse_args(argv)
    runtime = start_runtime(
        kubeconfig=args.kubeconfig or None,
        host=args.host,
        port=args.port,
        control_port=args.control_port,
        cache_seconds=args.cache_seconds,
        slots=args.slots,
        decode_seconds=args.decode_seconds,
        queue_limit=args.queue_limit,
    )
    print(f"runtime stand-in listening on {runtime.url} (control {runtime.control_url})", flush=True)
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    signal.signal(signal.SIGINT, lambda *_: done.set())
    done.wait()
    runtime.stop()


if __name__ == "__main__":
    main()
