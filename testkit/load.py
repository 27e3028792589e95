"""Load on an order through the local plane's entry address: ``clients`` threads, each sending one
request after another (a closed loop), until stopped. Each request carries the order's endpoint host
as SNI and ``Host`` and its token, and trusts the platform CA, as a client in the cluster would.

Used by the autoscaling e2e test and ``python -m bench.autoscale``. ``Load.counts`` tallies the
answers by status (``"error"`` for a connection that failed), so a caller can check that requests
kept succeeding while the order grew.
"""

from __future__ import annotations

import collections
import ssl
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx


@dataclass
class Target:
    address: str  # HOST:PORT of the entry address
    host: str  # the endpoint's host: <order>.<namespace>.svc
    token: str | None
    ca_file: str

    def client(self, *, timeout: float = 300.0) -> httpx.Client:
        ctx = ssl.create_default_context(cafile=self.ca_file)
        headers = {"Host": self.host, **({"Authorization": f"Bearer {self.token}"} if self.token else {})}
        client = httpx.Client(
            base_url=f"https://{self.address}", verify=ctx, headers=headers, timeout=timeout
        )
        client.event_hooks["request"] = [lambda r: r.extensions.__setitem__("sni_hostname", self.host)]
        return client


@dataclass
class Load:
    target: Target
    body: dict[str, Any]
    path: str = "/v1/chat/completions"
    counts: collections.Counter[str] = field(default_factory=collections.Counter)
    latencies: list[float] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def _worker(self) -> None:
        with self.target.client() as c:
            while not self._stop.is_set():
                began = time.monotonic()
                try:
                    status = str(c.post(self.path, json=self.body).status_code)
                except httpx.HTTPError:
                    status = "error"
                    self._stop.wait(0.5)  # a refused connection must not spin
                with self._lock:
                    self.counts[status] += 1
                    self.latencies.append(time.monotonic() - began)

    def ok_share(self) -> float:
        with self._lock:
            total = sum(self.counts.values())
            return self.counts["200"] / total if total else 0.0


@contextmanager
def running_load(target: Target, body: dict[str, Any], *, clients: int) -> Iterator[Load]:
    """``clients`` closed-loop senders until the block ends (each finishes its request in flight)."""
    load = Load(target, body)
    threads = [threading.Thread(target=load._worker, daemon=True, name=f"load-{i}") for i in range(clients)]
    for t in threads:
        t.start()
    try:
        yield load
    finally:
        load._stop.set()
        for t in threads:
            t.join(timeout=330)
