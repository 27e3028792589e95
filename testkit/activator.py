"""The activator (python -m activator) running on the local plane, as in a cluster but as a local process.

``running_activator`` applies the shipped RBAC (deploy/base/activator/rbac.yaml) and runs the activator
under its own ServiceAccount ``inference-activator`` (devtools/product/activator.py), so it reads exactly
what the shipped ClusterRole allows. It listens on the plane's aggregation address (the default route's
source address, devtools/cluster/netaddr.py: the API server refuses loopback endpoint addresses, as for
KEDA's metrics adapter) and forwards every held request to the runtime stand-in's entry address
(``--upstream-address-override``) with the order's SNI, verified against the platform CA (the CA the
controller's probe trusts).

In place of the shipped Deployment and its Service (no pod runs here), it writes in the module namespace a
selectorless Service ``inference-activator`` (ports ``https`` and ``metrics``) and an EndpointSlice for it
listing the process's address, ready: what the controller reads the activator's addresses from
(``kubernetes.io/service-name=inference-activator``, ready endpoints, the port named ``https``). With
Prometheus running (``scrape=True``), its ``inference-activator`` job scrapes the admin ``/metrics``.
Everything is removed when the block ends.
"""

from __future__ import annotations

import contextlib
import os
import pathlib
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import yaml

from devtools.cluster import launcher, netaddr
from devtools.cluster.components import prometheus
from devtools.cluster.handle import Cluster, Kubectl
from devtools.cluster.identity import service_account_kubeconfig
from devtools.product.activator import ActivatorProcess
from devtools.product.controller import NAMESPACE
from shared import names

ROOT = pathlib.Path(__file__).resolve().parents[1]
NAME = names.ACTIVATOR_SERVICE
SLICE = "inference-activator-plane"
SLICE_MANAGER = "testkit.inference.local"
"""Not Kubernetes' EndpointSlice controller (the Service has no selector, it would not touch the slice
anyway): the slice is the test kit's, standing for the one the Deployment's pods would get."""


@dataclass
class RunningActivator:
    process: ActivatorProcess

    @property
    def address(self) -> str:
        """``HOST:PORT`` of its HTTPS listener (in the ``inference-activator`` EndpointSlice)."""
        return self.process.address

    @property
    def url(self) -> str:
        """``http://HOST:PORT`` of its admin listener: ``/metrics``, ``/healthz``, ``/readyz``."""
        return self.process.admin_url

    def metrics(self) -> str:
        return self.process.metrics()

    def sample(self, name: str, **labels: str) -> float:
        """The value of one series of its ``/metrics`` (0 when absent), e.g.
        ``sample("inference_activator_requests_held", namespace="team", order="chat")``."""
        return metric_value(self.metrics(), name, labels)

    def held(self, namespace: str, order: str) -> float:
        return self.sample("inference_activator_requests_held", namespace=namespace, order=order)


def metric_value(text: str, name: str, labels: dict[str, str]) -> float:
    """The value of the series ``name`` whose labels include ``labels`` in a Prometheus text exposition;
    0 when there is none."""
    for line in text.splitlines():
        m = re.fullmatch(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)", line)
        if m is None or m[1] != name:
            continue
        found = dict(re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"', m[3] or ""))
        if all(found.get(k) == v for k, v in labels.items()):
            return float(m[4])
    return 0.0


def service_and_slice(address: str, admin_port: int) -> list[dict[str, object]]:
    """The selectorless Service ``inference-activator`` and its EndpointSlice listing ``address``
    (HOST:PORT of the HTTPS listener; the admin listener on the same host at ``admin_port``), ready."""
    host, port = address.rsplit(":", 1)
    service: dict[str, object] = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": NAME, "namespace": NAMESPACE, "labels": {"app.kubernetes.io/name": NAME}},
        "spec": {
            "ports": [
                {"name": "https", "port": 443, "targetPort": int(port), "protocol": "TCP"},
                {"name": "metrics", "port": 9090, "targetPort": admin_port, "protocol": "TCP"},
            ]
        },
    }
    endpoint_slice: dict[str, object] = {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {
            "name": SLICE,
            "namespace": NAMESPACE,
            "labels": {
                names.SERVICE_NAME_LABEL: NAME,
                names.SLICE_MANAGER_LABEL: SLICE_MANAGER,
            },
        },
        "addressType": "IPv4",
        "ports": [
            {"name": "https", "port": int(port), "protocol": "TCP"},
            {"name": "metrics", "port": admin_port, "protocol": "TCP"},
        ],
        "endpoints": [
            {"addresses": [host], "conditions": {"ready": True, "serving": True, "terminating": False}}
        ],
    }
    return [service, endpoint_slice]


def activator_env() -> dict[str, str]:
    """This environment without KUBECONFIG (the ServiceAccount's kubeconfig is passed) and HF_*."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "KUBECONFIG"))}


@contextmanager
def running_activator(
    cluster: Cluster,
    kubectl: Kubectl,
    *,
    upstream: str,
    ca_file: pathlib.Path,
    log_dir: pathlib.Path,
    max_hold_seconds: float = 300.0,
    retry_after_seconds: int = 10,
    scrape: bool = False,
    args: tuple[str, ...] = (),
) -> Iterator[RunningActivator]:
    """The activator under its ServiceAccount, its Service and EndpointSlice written, until the block
    ends; ``upstream``: the runtime stand-in's entry address; ``scrape``: add Prometheus's job."""
    kubectl("apply", "--server-side", "--force-conflicts", "--field-manager=e2e",
            "-f", str(ROOT / "deploy/base/activator/rbac.yaml"))  # fmt: skip
    kubeconfig = service_account_kubeconfig(
        kubectl=cluster.kubectl_path,
        admin_kubeconfig=cluster.kubeconfig,
        namespace=NAMESPACE,
        name=NAME,
        out=log_dir / "activator.kubeconfig",
    )
    process = ActivatorProcess(
        kubeconfig=kubeconfig,
        ca_file=ca_file,
        upstream=upstream,
        host=netaddr.aggregation_ip(),
        env=activator_env(),
        log_dir=log_dir,
        max_hold_seconds=max_hold_seconds,
        retry_after_seconds=retry_after_seconds,
        args=args,
    )
    process.start()
    plane = launcher.plane(launcher.build()) if scrape else None
    try:
        docs = service_and_slice(process.address, process.admin_port)
        kubectl("apply", "--server-side", "--force-conflicts", "--field-manager=e2e", "-f", "-",
                input=yaml.safe_dump_all(docs))  # fmt: skip
        if plane is not None:
            prometheus.set_activator_target(plane, f"{process.host}:{process.admin_port}")
        yield RunningActivator(process)
    finally:
        if plane is not None:
            with contextlib.suppress(prometheus.PrometheusError, OSError):  # Prometheus stopped first
                prometheus.set_activator_target(plane, None)
        kubectl("delete", "endpointslice", SLICE, "-n", NAMESPACE, "--ignore-not-found", check=False)
        kubectl("delete", "service", NAME, "-n", NAMESPACE, "--ignore-not-found", check=False)
        process.stop()
