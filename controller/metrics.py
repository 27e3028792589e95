"""The controller's Prometheus metrics, registered on a registry the caller owns (no global registry).

``python -m controller`` builds one ``ControllerMetrics`` and passes it to the reconciler and the
workers; ``controller.health`` serves the registry on ``/metrics``.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

PREFIX = "inference_controller"
RECONCILE_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


class ControllerMetrics:
    def __init__(self, registry: CollectorRegistry, *, prefix: str = PREFIX) -> None:
        self.registry = registry
        self.reconcile_duration = Histogram(
            f"{prefix}_reconcile_duration_seconds",
            "Time one reconcile of a key took, by result (ok, conflict, error).",
            ["result"],
            buckets=RECONCILE_BUCKETS,
            registry=registry,
        )
        self.queue_depth = Gauge(
            f"{prefix}_queue_depth", "Keys waiting in the work queue.", registry=registry
        )
        self.orders_by_phase = Gauge(
            f"{prefix}_orders", "InferenceService orders by status.phase.", ["phase"], registry=registry
        )
        self.hub_calls = Counter(
            f"{prefix}_hub_calls", "Calls to the model hub, by outcome.", ["outcome"], registry=registry
        )
        self.probes = Counter(
            f"{prefix}_probes",
            "Probes of the Inference API (GET /v1/models), by outcome.",
            ["outcome"],
            registry=registry,
        )
        self.plans = Counter(
            f"{prefix}_plans", "Placement decisions, by outcome.", ["outcome"], registry=registry
        )
        self.api_writes = Counter(
            f"{prefix}_api_writes",
            "Write requests to the API server that it answered (refused ones included), by kind and verb: "
            "every write, counted where all of them pass (controller.kube.client); Events are kind=Event.",
            ["kind", "verb"],
            registry=registry,
        )
        self.events_dropped = Counter(
            f"{prefix}_events_dropped",
            "Events not sent because the event queue was full (Events are best effort).",
            registry=registry,
        )
        self.devices = Gauge(
            f"{prefix}_devices", "Devices the ledger holds from the ResourceSlices.", registry=registry
        )
        self.over_committed = Gauge(
            f"{prefix}_overcommitted_devices",
            "Devices the ledger sees taken whole by two claims or reservations at once (always 0).",
            registry=registry,
        )
        self.leader = Gauge(
            f"{prefix}_leader", "1 while this replica holds the leader Lease.", registry=registry
        )
