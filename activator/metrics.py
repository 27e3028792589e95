"""The activator's Prometheus instruments, on the registry it is given (no process-global one).

``inference_activator_requests_held{namespace,order}`` is the wake-up signal: the order's KEDA
ScaledObject adds it to its queue-depth query, so an order at zero replicas with a request held
scales to one. Only requests that passed the token check are ever counted in it.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from activator.hosts import OrderKey

HOLD_OUTCOMES = ("forwarded", "timeout", "refused_full", "client_closed")
REFUSAL_REASONS = ("unauthorized", "unknown_order", "too_many_held", "timeout", "bad_request", "loop")
_HOLD_BUCKETS = (0.01, 0.1, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 90, 120, 180, 240, 300, 600)


class ActivatorMetrics:
    def __init__(self, *, registry: CollectorRegistry) -> None:
        self.registry = registry
        self._held = Gauge(
            "inference_activator_requests_held",
            "Requests with a valid token held by the activator until the order has a ready replica.",
            ["namespace", "order"],
            registry=registry,
        )
        hold = Histogram(
            "inference_activator_hold_seconds",
            "Time a request with a valid token was held, by outcome: forwarded (an upstream became ready; "
            "0 when one already was), timeout (maxHoldSeconds ran out: 503), refused_full (too many held: "
            "503 at once), client_closed (the client went away while held).",
            ["outcome"],
            buckets=_HOLD_BUCKETS,
            registry=registry,
        )
        self._wakeups = Counter(
            "inference_activator_wakeups",
            "Holds that started while the order had no ready upstream and no other request was held for it.",
            ["namespace", "order"],
            registry=registry,
        )
        refused = Counter(
            "inference_activator_requests_refused",
            "Requests the activator answered itself with an error, by reason (loop: one that came back"
            " through an activator, closed unanswered).",
            ["reason"],
            registry=registry,
        )
        self._forward_errors = Counter(
            "inference_activator_forward_errors",
            "Forwards that failed: before the upstream answered (the request is held again, within its bound) or mid-answer (cut).",
            registry=registry,
        )
        self._hold = {o: hold.labels(o) for o in HOLD_OUTCOMES}
        self._refused = {r: refused.labels(r) for r in REFUSAL_REASONS}

    def set_held(self, order: OrderKey, n: int) -> None:
        self._held.labels(order.namespace, order.name).set(n)

    def hold_ended(self, outcome: str, seconds: float) -> None:
        self._hold[outcome].observe(seconds)

    def woke(self, order: OrderKey) -> None:
        self._wakeups.labels(order.namespace, order.name).inc()

    def refused(self, reason: str) -> None:
        self._refused[reason].inc()

    def forward_failed(self) -> None:
        self._forward_errors.inc()
