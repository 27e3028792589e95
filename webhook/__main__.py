"""``python -m webhook --cert-file F --key-file F [--port 9443] [--host 0.0.0.0]``: serve over TLS.

One uvicorn worker serves the app with a TLS 1.2+ context whose certificate is reloaded from the
files when cert-manager rotates them (see ``webhook.tls``); no restart is needed.
"""

from __future__ import annotations

import argparse
import gc
import logging
import sys
from collections.abc import Sequence
from typing import Any

import uvicorn
from prometheus_client import CollectorRegistry

from webhook.app import create_app
from webhook.metrics import CertificateCollector
from webhook.tls import ReloadingCertificate


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m webhook", description="The inference admission webhook.")
    parser.add_argument("--cert-file", required=True, help="PEM serving certificate (chain)")
    parser.add_argument("--key-file", required=True, help="PEM private key of the certificate")
    parser.add_argument("--host", default="0.0.0.0", help="address to listen on (default 0.0.0.0)")
    parser.add_argument("--port", type=int, default=9443, help="port to listen on (default 9443)")
    parser.add_argument(
        "--reload-check-seconds",
        type=float,
        default=10.0,
        help="how often, at most, a new handshake checks the certificate files for a rotation (default 10)",
    )
    parser.add_argument(
        "--keep-alive-seconds",
        type=float,
        default=5.0,
        help="close an idle client connection after this long (default 5); the next request handshakes anew",
    )
    parser.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    return parser.parse_args(argv)


def build_server(args: argparse.Namespace) -> uvicorn.Server:
    """A uvicorn server over TLS with the reloading certificate; ``server.run()`` serves."""
    certificate = ReloadingCertificate(
        cert_file=args.cert_file, key_file=args.key_file, check_every=args.reload_check_seconds
    )
    registry = CollectorRegistry()
    registry.register(CertificateCollector(certificate))
    return tls_server(create_app(registry=registry), args, certificate)


def tls_server(app: Any, args: argparse.Namespace, certificate: ReloadingCertificate) -> uvicorn.Server:
    """One uvicorn worker serving ``app`` over ``certificate``'s context (the benchmark's floor uses
    this too, so the two stacks differ only in the app)."""
    config = uvicorn.Config(
        app,
        host=args.host,
        port=args.port,
        log_level=args.log_level,
        access_log=False,
        server_header=False,
        proxy_headers=False,
        lifespan="off",
        timeout_keep_alive=max(1, round(args.keep_alive_seconds)),
    )
    config.load()
    config.ssl = certificate.context  # our own context: uvicorn's would never reload the files
    # Everything imported so far (FastAPI, pydantic, the CEL grammar) lives as long as the process:
    # keep it out of the collector's full passes, which would otherwise pause requests for tens of ms.
    gc.collect()
    gc.freeze()
    return uvicorn.Server(config)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s %(message)s")
    build_server(args).run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
