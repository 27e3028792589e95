"""Prometheus and KEDA on the local plane, for the tests that need autoscaling (``PLATFORM_AUTOSCALING``).

``running_autoscaling`` starts both onto the running plane (devtools/cluster/launcher.py
``start_metrics``: plane daemons, a few seconds warm) unless they run, and stops them at the end only if
it started them, so the other tests pay nothing and a plane brought up with ``up --metrics`` keeps them.
``Autoscaling.prometheus_url`` is the address to query (the controller's ``prometheusServerAddress``, a
ScaledObject's prometheus trigger); ``scrape(target)`` points the ``inference-runtime`` job at HOST:PORT
(the runtime stand-in's control address, or a test's own server answering ``/_standin/metrics/<ns>/<pod>``).
"""

from __future__ import annotations

import json
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from devtools.cluster import launcher
from devtools.cluster.components import prometheus


@dataclass(frozen=True)
class Autoscaling:
    prometheus_url: str
    prometheus_seconds: float  # how long Prometheus took to be ready (0: it ran already)
    keda_seconds: float  # how long KEDA took (operator ready, APIService Available)

    def scrape(self, target: str) -> None:
        """Scrape each order's pod at ``target`` (HOST:PORT) from now on (a configuration reload)."""
        prometheus.set_scrape_target(launcher.plane(launcher.build()), target)

    def query(self, promql: str) -> list[dict[str, Any]]:
        """The instant vector of ``promql``: ``[{"metric": {...}, "value": [ts, "v"]}, ...]``."""
        url = f"{self.prometheus_url}/api/v1/query?{urllib.parse.urlencode({'query': promql})}"
        with urllib.request.urlopen(url, timeout=10) as r:
            body = json.loads(r.read())
        result: list[dict[str, Any]] = body["data"]["result"]
        return result


@contextmanager
def running_autoscaling(*, target: str | None = None) -> Iterator[Autoscaling]:
    """Prometheus (scraping ``target`` when given) and KEDA on the plane until the block ends."""
    m = launcher.start_metrics(target=target)
    try:
        yield Autoscaling(m.prometheus_url, m.prometheus_seconds, m.keda_seconds)
    finally:
        if m.started:
            launcher.stop_metrics()
