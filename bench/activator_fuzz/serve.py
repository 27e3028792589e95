"""``python -m bench.activator_fuzz.serve --objects DIR [activator flags]``: the activator, fed from files.

``python -m activator`` lists and watches Secrets and EndpointSlices through a Kubernetes API
(``KubeReader``); the bench has none. This runs the same ``activator.app.Activator`` with the same
settings parser (``activator.__main__.parse_args``: every flag of ``python -m activator``) and the
same ``OrderBook`` (and so the same parsing of the objects, ``activator.kube_objects``), fed from
``DIR/secrets.json`` (read once) and ``DIR/slices.json`` (read again whenever it changes, as a
watch event would update the book). Only the list and watch differ. Adding a file source to the
product's entry point would be product surface for a bench alone.

The admin port's ``/metrics`` gains two gauges of this process's own: ``bench_activator_connections_open``
(``Proxy.connections``) and ``bench_activator_holds_total`` (the hold ledger's total), read when
scraped.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

from prometheus_client import Gauge

from activator.__main__ import parse_args
from activator.app import Activator
from activator.order_book import OrderBook


class _Synced:
    def synced(self) -> bool:
        return True


async def _watch_slices(book: OrderBook, path: Path) -> None:
    seen: float | None = None
    while True:
        try:
            mtime = path.stat().st_mtime
        except FileNotFoundError:
            mtime = None
        if mtime is not None and mtime != seen:
            book.reset_slices(json.loads(path.read_text()))
            seen = mtime
            logging.getLogger("bench.activator_fuzz").info("slices read from %s", path)
        await asyncio.sleep(0.1)


async def serve(argv: Sequence[str], objects: Path) -> None:
    settings, _ = parse_args(argv)
    book = OrderBook()
    book.reset_secrets(json.loads((objects / "secrets.json").read_text()))
    activator = Activator(settings=settings, secrets=book, upstreams=book, readiness=_Synced())
    Gauge("bench_activator_connections_open", "Proxy.connections", registry=activator.registry).set_function(
        lambda: activator.proxy.connections
    )
    Gauge("bench_activator_holds_total", "the hold ledger's total", registry=activator.registry).set_function(
        lambda: activator.holds.total
    )
    watch = asyncio.create_task(_watch_slices(book, objects / "slices.json"))
    try:
        await activator.serve_until_signalled()
    finally:
        watch.cancel()


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.activator_fuzz.serve", add_help=False)
    p.add_argument("--objects", required=True, type=Path)
    own, rest = p.parse_known_args(argv)
    logging.basicConfig(level="INFO", format="%(asctime)s %(levelname)s %(name)s %(message)s")
    asyncio.run(serve(rest, own.objects))
    return 0


if __name__ == "__main__":
    sys.exit(main())
