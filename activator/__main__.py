"""``python -m activator --upstream-ca-file F [options]``: serve the orders scaled to zero.

Reads the orders' Secrets and EndpointSlices with the ``kubernetes`` client (in-cluster, or
``--kubeconfig``), serves HTTPS for every order on ``--port`` and ``/metrics``, ``/healthz``,
``/readyz`` on ``--admin-port``. SIGTERM and SIGINT stop the listeners; requests still held are
cut (their clients retry through the order's Service).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
from collections.abc import Sequence
from dataclasses import fields

from kubernetes import client as k8s
from kubernetes import config as k8s_config

from activator.app import Activator
from activator.kube_reader import KubeReader
from activator.order_book import OrderBook
from activator.settings import Settings

_HELP = {
    "host": "address of the HTTPS listener (default 0.0.0.0)",
    "port": "port of the HTTPS listener that serves every order by SNI (default 8443)",
    "admin_host": "address of the plain-HTTP admin listener (default 0.0.0.0)",
    "admin_port": "port of /metrics, /healthz and /readyz (default 9090)",
    "upstream_ca_file": "PEM of the platform CA the orders' certificates chain to (required)",
    "upstream_address_override": "HOST:PORT every forward goes to, with the order's SNI (the local plane's entry)",
    "max_hold_seconds": "how long a request is held for a ready replica before 503 (default 300)",
    "retry_after_seconds": "the Retry-After of a 503 (default 10)",
    "max_held_per_order": "requests held at most per order; beyond, 503 at once (default 64)",
    "max_held_total": "requests held at most in all (default 1024)",
    "max_connections": "client connections open at once, about 0.3 MiB each; beyond, closed after the handshake (default 1024)",
    "max_header_bytes": "request line and headers at most (default 65536; beyond, 431)",
    "max_body_bytes": "request body at most (default 4194304; beyond, 413)",
    "max_body_bytes_total": "request bodies kept at once, every connection together (default 268435456; beyond, 503)",
    "header_timeout_seconds": "for the TLS handshake, and for the request head (default 10)",
    "body_timeout_seconds": "for the request body (default 60; beyond, 408)",
    "upstream_poll_seconds": "how often a held request looks for a ready replica (default 0.2)",
    "upstream_retry_seconds": "after a forward that failed before any answer, hold this long before trying again (default 1)",
    "upstream_connect_timeout_seconds": "connecting to a replica (default 10)",
    "upstream_read_timeout_seconds": "between two reads of a replica's answer (default 600)",
}


def parse_args(argv: Sequence[str] | None = None) -> tuple[Settings, argparse.Namespace]:
    parser = argparse.ArgumentParser(
        prog="python -m activator", description="Holds the requests of orders scaled to zero until they wake."
    )
    for f in fields(Settings):
        flag = "--" + f.name.replace("_", "-")
        kind = {"int": int, "float": float}.get(str(f.type).split(" ")[0], str)
        if f.name == "upstream_ca_file":
            parser.add_argument(flag, required=True, help=_HELP[f.name])
        else:
            parser.add_argument(flag, type=kind, default=f.default, help=_HELP[f.name])
    parser.add_argument(
        "--kubeconfig", default=None, help="a kubeconfig (default: in-cluster, else $KUBECONFIG)"
    )
    parser.add_argument(
        "--max-objects", type=int, default=20000, help="Secrets or EndpointSlices kept at most"
    )
    parser.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    args = parser.parse_args(argv)
    try:
        settings = Settings(**{f.name: getattr(args, f.name) for f in fields(Settings)})
    except ValueError as e:
        parser.error(str(e))
    return settings, args


def api_client(kubeconfig: str | None) -> k8s.ApiClient:
    configuration = k8s.Configuration()
    if kubeconfig is None and os.environ.get("KUBERNETES_SERVICE_HOST"):
        k8s_config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
    else:
        k8s_config.load_kube_config(  # type: ignore[no-untyped-call]
            config_file=kubeconfig, client_configuration=configuration, persist_config=False
        )
    return k8s.ApiClient(configuration)


async def serve(settings: Settings, book: OrderBook, reader: KubeReader) -> None:
    activator = Activator(settings=settings, secrets=book, upstreams=book, readiness=reader)
    await activator.serve_until_signalled()


def main(argv: Sequence[str] | None = None) -> int:
    settings, args = parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s %(message)s")
    book = OrderBook()
    reader = KubeReader(api_client(args.kubeconfig), book, max_objects=args.max_objects)
    reader.start()
    try:
        asyncio.run(serve(settings, book, reader))
    finally:
        reader.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
