"""Prometheus metrics of the webhook: request latency per path and decisions by outcome.

One ``WebhookMetrics`` per app, on the registry the app is given (no process-global registry), so
tests and benchmarks can run several apps in one process.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Protocol

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client.metrics_core import CounterMetricFamily, Metric
from prometheus_client.registry import Collector

OUTCOMES = ("allowed", "patched", "denied", "refused_request", "internal_error", "malformed")
_BUCKETS = (0.0002, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0)


class WebhookMetrics:
    """The webhook's instruments, with children pre-bound for each path (labels cost on the hot path)."""

    def __init__(self, *, registry: CollectorRegistry, paths: Iterable[str]) -> None:
        latency = Histogram(
            "inference_webhook_request_duration_seconds",
            "Time to answer one admission request, from the body read to the response built.",
            ["path"],
            buckets=_BUCKETS,
            registry=registry,
        )
        decisions = Counter(
            "inference_webhook_decisions",
            "Admission decisions by outcome: allowed, patched (allowed with a JSONPatch), denied (the object "
            "is invalid), refused_request (wrong kind or operation), internal_error (a handler bug, refused), "
            "malformed (HTTP 400).",
            ["path", "outcome"],
            registry=registry,
        )
        self._latency = {p: latency.labels(p) for p in paths}
        self._decisions = {(p, o): decisions.labels(p, o) for p in paths for o in OUTCOMES}

    def observe(self, path: str, outcome: str, seconds: float) -> None:
        self._latency[path].observe(seconds)
        self._decisions[(path, outcome)].inc()


class CertificateCounts(Protocol):
    reloads: int
    handshakes: int


class CertificateCollector(Collector):
    """Reloads of the serving certificate and TLS handshakes, read from the TLS edge at scrape time."""

    def __init__(self, certificate: CertificateCounts) -> None:
        self._certificate = certificate

    def collect(self) -> Iterator[Metric]:
        yield CounterMetricFamily(
            "inference_webhook_certificate_reloads",
            "Times the serving certificate was reloaded from its files after a rotation.",
            value=self._certificate.reloads,
        )
        yield CounterMetricFamily(
            "inference_webhook_tls_handshakes",
            "TLS handshakes started (each new connection).",
            value=self._certificate.handshakes,
        )
