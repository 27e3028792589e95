"""The health and metrics servers on loopback: /healthz, /readyz follows ``ready``, /metrics serves the
registry the controller's metrics live on."""

from __future__ import annotations

import socket
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest
from prometheus_client import CollectorRegistry

from controller.health import HealthServer
from controller.metrics import ControllerMetrics


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def fetch(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as e:
        with e:
            return e.code, e.read().decode()


class Ready:
    def __init__(self) -> None:
        self.value = False

    def __call__(self) -> bool:
        return self.value


@pytest.fixture
def served() -> Iterator[tuple[HealthServer, ControllerMetrics, Ready]]:
    registry = CollectorRegistry()
    metrics = ControllerMetrics(registry)
    ready = Ready()
    server = HealthServer(
        registry=registry,
        metrics_port=free_port(),
        health_port=free_port(),
        bind_address="127.0.0.1",
        ready=ready,
    )
    server.start()
    yield server, metrics, ready
    server.stop()


def test_healthz_answers_while_the_process_runs(
    served: tuple[HealthServer, ControllerMetrics, Ready],
) -> None:
    server, _, _ = served
    assert fetch(server.health_port, "/healthz") == (200, "ok\n")


def test_readyz_answers_503_until_ready_then_200(
    served: tuple[HealthServer, ControllerMetrics, Ready],
) -> None:
    server, _, ready = served
    assert fetch(server.health_port, "/readyz") == (503, "not ready\n")
    ready.value = True
    assert fetch(server.health_port, "/readyz") == (200, "ok\n")


def test_metrics_serves_the_controllers_registry(
    served: tuple[HealthServer, ControllerMetrics, Ready],
) -> None:
    server, metrics, _ = served
    metrics.reconcile_duration.labels(result="ok").observe(0.2)
    metrics.queue_depth.set(3)
    metrics.orders_by_phase.labels(phase="Ready").set(2)
    metrics.hub_calls.labels(outcome="ok").inc()
    metrics.probes.labels(outcome="success").inc(4)
    metrics.api_writes.labels(kind="Deployment", verb="apply").inc()
    code, text = fetch(server.metrics_port, "/metrics")
    assert code == 200
    for line in (
        'inference_controller_reconcile_duration_seconds_count{result="ok"} 1.0',
        "inference_controller_queue_depth 3.0",
        'inference_controller_orders{phase="Ready"} 2.0',
        'inference_controller_hub_calls_total{outcome="ok"} 1.0',
        'inference_controller_probes_total{outcome="success"} 4.0',
        'inference_controller_api_writes_total{kind="Deployment",verb="apply"} 1.0',
    ):
        assert line in text.splitlines()


def test_unknown_paths_are_404_and_metrics_are_not_on_the_health_port(
    served: tuple[HealthServer, ControllerMetrics, Ready],
) -> None:
    server, _, _ = served
    assert fetch(server.health_port, "/metrics")[0] == 404
    assert fetch(server.metrics_port, "/nope")[0] == 404


def test_one_port_for_both_serves_all_three_paths() -> None:
    registry = CollectorRegistry()
    port = free_port()
    server = HealthServer(registry=registry, metrics_port=port, health_port=port, bind_address="127.0.0.1",
                          ready=lambda: True)  # fmt: skip
    assert sorted(server.routes()[port]) == ["/healthz", "/metrics", "/readyz"]


def test_a_port_of_zero_turns_its_server_off() -> None:
    server = HealthServer(registry=CollectorRegistry(), metrics_port=0, health_port=0, ready=lambda: True)
    assert server.routes() == {}


def test_a_ready_check_that_raises_reads_as_not_ready(
    served: tuple[HealthServer, ControllerMetrics, Ready],
) -> None:
    server, _, _ = served

    def broken() -> bool:
        raise RuntimeError("boom")

    server.ready = broken
    assert fetch(server.health_port, "/readyz") == (503, "not ready\n")
