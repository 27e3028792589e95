"""KEDA and Prometheus on the real plane: a ScaledObject with a prometheus trigger drives a Deployment's
replicas through the HPA of the real kube-controller-manager.

Nothing here is a Kubernetes fake. KEDA's operator, metrics adapter and webhooks, and Prometheus, run
as plane daemons (devtools/cluster/components/keda.py, prometheus.py; testkit/autoscaling.py); the
external metrics API reaches the HPA controller through kube-apiserver's aggregation layer. The only
stand-in is the scrape target: KWOK's pods have no reachable IPs, so Prometheus scrapes each pod at one
control address (``/_standin/metrics/<namespace>/<pod>``, what the runtime stand-in serves in the
product), here a tiny HTTP server of this module whose value the test sets.

Checked: Prometheus discovers the Deployment's pods (by the order label) and labels their samples with
namespace, pod and order; KEDA creates the HPA ``keda-hpa-<name>``; KEDA's admission webhook refuses a
second ScaledObject on the same Deployment; the HPA reads the external metric
through the aggregation layer; the replicas follow the metric up (3 for a value of 3 at threshold 1,
AverageValue) and, with the ScaledObject's zero scale-down window, back down to the minimum. The HPA
controller syncs every 5 s on this plane (devtools/cluster/tuning.py, default profile).
"""

from __future__ import annotations

import http.server
import json
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import yaml

from devtools import procs
from devtools.cluster.handle import Cluster, Kubectl
from shared.names import LABEL_ORDER
from testkit.autoscaling import Autoscaling, running_autoscaling

pytestmark = pytest.mark.cluster

PLATFORM_AUTOSCALING = True  # what this module needs, as the e2e modules' flag says it
Obj = dict[str, Any]
WaitFor = Callable[..., Any]
METRIC = "vllm:num_requests_waiting"
NAME = "web"


class MetricTarget:
    """Serves ``/_standin/metrics/<namespace>/<pod>`` as Prometheus text: one gauge whose value the test
    sets, and records which pods were scraped."""

    def __init__(self) -> None:
        self.value = 0.0
        self.scraped: set[str] = set()
        target = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                parts = self.path.strip("/").split("/")
                if len(parts) != 4 or parts[:2] != ["_standin", "metrics"]:
                    self.send_error(404)
                    return
                target.scraped.add(f"{parts[2]}/{parts[3]}")
                body = (
                    f"# HELP {METRIC} Requests waiting.\n# TYPE {METRIC} gauge\n"
                    f'{METRIC}{{model_name="tiny"}} {target.value}\n'
                ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", procs.free_port()), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def address(self) -> str:
        host, port = self.server.server_address[:2]
        return f"{host!s}:{port}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def target() -> Iterator[MetricTarget]:
    t = MetricTarget()
    yield t
    t.close()


@pytest.fixture(scope="module")
def autoscaling(cluster: Cluster, target: MetricTarget) -> Iterator[Autoscaling]:
    t0 = time.monotonic()
    with running_autoscaling(target=target.address) as a:
        print(
            f"\nPrometheus ready in {a.prometheus_seconds:.1f}s, KEDA in {a.keda_seconds:.1f}s "
            f"(fixture {time.monotonic() - t0:.1f}s)"
        )
        yield a


def _json(kubectl: Kubectl, *args: str) -> Obj | None:
    out = kubectl("get", *args, "-o", "json", "--ignore-not-found").stdout.strip()
    return json.loads(out) if out else None


def deployment(namespace: str) -> Obj:
    labels = {"app": NAME, LABEL_ORDER: NAME}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": NAME, "namespace": namespace},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": NAME}},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "runtime", "image": "registry.invalid/runtime:1"}]},
            },
        },
    }


def scaled_object(namespace: str, prometheus_url: str) -> Obj:
    query = f'max({METRIC}{{namespace="{namespace}",order="{NAME}"}})'
    return {
        "apiVersion": "keda.sh/v1alpha1",
        "kind": "ScaledObject",
        "metadata": {"name": NAME, "namespace": namespace},
        "spec": {
            "scaleTargetRef": {"name": NAME},
            "minReplicaCount": 1,
            "maxReplicaCount": 4,
            "pollingInterval": 5,
            "cooldownPeriod": 5,
            "advanced": {
                "horizontalPodAutoscalerConfig": {
                    "behavior": {
                        "scaleDown": {
                            "stabilizationWindowSeconds": 0,
                            "policies": [{"type": "Percent", "value": 100, "periodSeconds": 5}],
                        }
                    }
                }
            },
            "triggers": [
                {
                    "type": "prometheus",
                    "metricType": "AverageValue",
                    "metadata": {"serverAddress": prometheus_url, "query": query, "threshold": "1"},
                }
            ],
        },
    }


def test_scaled_object_drives_replicas_through_the_hpa(
    autoscaling: Autoscaling, target: MetricTarget, kubectl: Kubectl, namespace: str, wait_for: WaitFor
) -> None:
    t0 = time.monotonic()
    marks: dict[str, float] = {}

    def mark(what: str) -> None:
        marks[what] = round(time.monotonic() - t0, 1)

    def apply(obj: Obj) -> None:
        kubectl("apply", "--server-side", "--field-manager=test-keda", "-f", "-", input=yaml.safe_dump(obj))

    def replicas() -> tuple[int, int]:
        d = _json(kubectl, "deployment", NAME, "-n", namespace) or {}
        return d.get("spec", {}).get("replicas", 0), d.get("status", {}).get("readyReplicas", 0)

    target.value = 0
    apply(deployment(namespace))
    wait_for(replicas, lambda r: r == (1, 1), timeout=60, message="the Deployment's pod Ready (KWOK)")
    mark("deployment ready")

    # Prometheus: the pod discovered by the order label, scraped at the control address, labelled.
    series = wait_for(
        lambda: autoscaling.query(f'{METRIC}{{namespace="{namespace}"}}'),
        lambda r: len(r) == 1,
        timeout=60,
        message="Prometheus scraped the pod",
    )
    labels = series[0]["metric"]
    assert labels["order"] == NAME and labels["namespace"] == namespace
    assert labels["pod"].startswith(f"{NAME}-") and labels["job"] == "inference-runtime"
    assert f"{namespace}/{labels['pod']}" in target.scraped
    mark("scraped")

    try:
        apply(scaled_object(namespace, autoscaling.prometheus_url))
        hpa_name = f"keda-hpa-{NAME}"
        hpa = wait_for(
            lambda: _json(kubectl, "hpa", hpa_name, "-n", namespace),
            lambda h: h is not None,
            timeout=60,
            message=f"KEDA created HPA {hpa_name}",
        )
        assert hpa["spec"]["scaleTargetRef"]["name"] == NAME
        external = hpa["spec"]["metrics"][0]["external"]
        assert external["target"] == {"type": "AverageValue", "averageValue": "1"}
        mark("hpa created")

        # KEDA's admission webhook (registered by url) refuses a second ScaledObject on the same workload.
        second = scaled_object(namespace, autoscaling.prometheus_url)
        second["metadata"]["name"] = f"{NAME}-again"
        res = kubectl("apply", "--server-side", "--field-manager=test-keda", "-f", "-",
                      input=yaml.safe_dump(second), check=False)  # fmt: skip
        # (by the ScaledObject, or by its HPA once that exists: whichever check KEDA meets first)
        assert res.returncode != 0 and "denied the request" in res.stderr
        assert f"'{NAME}' of type 'apps/v1.Deployment' is already managed by the" in res.stderr

        # The HPA controller reads the external metric through the aggregation layer (KEDA's adapter).
        def current(h: Obj | None) -> str | None:
            for m in ((h or {}).get("status") or {}).get("currentMetrics") or []:
                if m.get("type") == "External":
                    return str(m["external"]["current"].get("averageValue"))
            return None

        wait_for(
            lambda: _json(kubectl, "hpa", hpa_name, "-n", namespace),
            lambda h: current(h) == "0",
            timeout=90,
            message="the HPA read the external metric (0)",
        )
        raw = kubectl(
            "get", "--raw",
            f"/apis/external.metrics.k8s.io/v1beta1/namespaces/{namespace}/{external['metric']['name']}"
            f"?labelSelector=scaledobject.keda.sh%2Fname%3D{NAME}",
        ).stdout  # fmt: skip
        assert json.loads(raw)["items"][0]["metricName"] == external["metric"]["name"]
        mark("hpa reads metric")

        target.value = 3
        wait_for(replicas, lambda r: r == (3, 3), timeout=120, message="3 replicas Ready for a value of 3")
        mark("scaled up to 3")

        target.value = 0
        wait_for(replicas, lambda r: r[0] == 1, timeout=120, message="back to 1 replica for a value of 0")
        mark("scaled down to 1")
        hpa = _json(kubectl, "hpa", hpa_name, "-n", namespace) or {}
        assert hpa["status"]["desiredReplicas"] == 1
    finally:
        kubectl(
            "delete",
            "scaledobject",
            NAME,
            "-n",
            namespace,
            "--ignore-not-found",
            "--timeout=60s",
            check=False,
        )
        print(f"\ntimeline (s): {marks}")
