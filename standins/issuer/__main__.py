"""``python -m standins.issuer --ca-cert CA.crt --ca-key CA.key [--kubeconfig K] [--period 1]``."""

from __future__ import annotations

import argparse
import os
import signal
import threading
from pathlib import Path

from standins.issuer import start_issuer


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m standins.issuer", description=__doc__)
    parser.add_argument("--ca-cert", required=True, help="PEM certificate of the platform CA")
    parser.add_argument("--ca-key", required=True, help="PEM private key of the platform CA")
    parser.add_argument("--kubeconfig", default=os.environ.get("KUBECONFIG"))
    parser.add_argument("--period", type=float, default=1.0, help="seconds between passes")
    args = parser.parse_args(argv)
    issuer = start_issuer(
        ca_cert_pem=Path(args.ca_cert).read_bytes(),
        ca_key_pem=Path(args.ca_key).read_bytes(),
        kubeconfig=args.kubeconfig,
        period=args.period,
    )
    print("issuer stand-in running", flush=True)
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    signal.signal(signal.SIGINT, lambda *_: done.set())
    done.wait()
    issuer.stop()


if __name__ == "__main__":
    main()
