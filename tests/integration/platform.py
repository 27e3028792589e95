"""The product running against the real control plane, for end-to-end tests of the controller.

``platform`` (module scope) installs the CRDs, cert-manager's CRDs, the bundled class and recipe,
and the module settings; starts the Hub mirror and the runtime stand-in in-process; and runs the
controller as a real process (``python -m controller``). The controller's probe reaches the stand-in
through the documented module setting ``probeAddressOverride``, not a test-only branch; likewise
its scrapes of a running model fetcher go to ``fetcher_metrics_port`` on loopback through
``modelFetcherMetricsAddressOverride`` (a test runs the real fetcher there; KWOK pod IPs are not
reachable).
"""

from __future__ import annotations

import json
import os
import pathlib
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import yaml
from kubernetes import client as k8s

from devtools.cluster.identity import service_account_kubeconfig
from hack import lws as lws_plane
from standins.hub_mirror import RunningMirror, start_mirror
from standins.issuer import start_issuer
from standins.runtime import RunningRuntime, make_ca, start_runtime
from tests.integration.conftest import Cluster, Kubectl, wait_for

ROOT = pathlib.Path(__file__).resolve().parents[2]
NS = "d8-inference"
HF_TOKEN = "hf_e2e_test_token"
SETTINGS = {
    "catalogEnabled": "true",
    "probePeriodSeconds": "1",
    "probeFailureThreshold": "2",
    "probeTimeoutSeconds": "2",
    "modelStorageClass": "inference-models",
    "claimGraceSeconds": "6",
    "scaleUpGraceSeconds": "5",
    "resyncSeconds": "600",
}

Obj = dict[str, Any]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class ControllerProcess:
    """``python -m controller`` as a child process, with its log file and metrics port."""

    cluster: Cluster
    env: dict[str, str]
    log_dir: pathlib.Path
    proc: subprocess.Popen[bytes] | None = None
    metrics_port: int = 0
    health_port: int = 0
    starts: int = 0
    args: tuple[str, ...] = ("--no-leader-elect",)
    name: str = "controller"
    kubeconfig: pathlib.Path | None = None  # the controller's ServiceAccount; the admin's when None

    def start(self) -> None:
        self.metrics_port, self.health_port = free_port(), free_port()
        self.starts += 1
        with (self.log_dir / f"{self.name}-{self.starts}.log").open("wb") as log:
            self.proc = self._spawn(log)
        wait_for(self._ready, bool, timeout=90, message="the controller's /readyz")

    def _spawn(self, log: Any) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            [
                sys.executable,
                "-m",
                "controller",
                "--kubeconfig",
                str(self.kubeconfig or self.cluster.kubeconfig),
                "--namespace",
                NS,
                "--settings-configmap",
                "inference-settings",
                *self.args,
                "--metrics-port",
                str(self.metrics_port),
                "--health-port",
                str(self.health_port),
                "--bind-address",
                "127.0.0.1",
            ],
            cwd=ROOT,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )

    def _ready(self) -> bool:
        assert self.proc is not None
        if self.proc.poll() is not None:
            raise AssertionError(f"controller exited with {self.proc.returncode}; see {self.log_dir}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.health_port}/readyz", timeout=1) as r:
                return bool(r.status == 200)
        except OSError:
            return False

    def metrics(self) -> str:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=5) as r:
            return str(r.read().decode())

    def kill(self) -> None:
        """SIGKILL: no graceful shutdown, as when a node dies."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def restart(self) -> None:
        self.kill()
        self.start()


@dataclass
class Platform:
    cluster: Cluster
    kubectl: Kubectl
    api: k8s.ApiClient
    mirror: RunningMirror
    runtime: RunningRuntime
    controller: ControllerProcess
    ca_file: pathlib.Path  # the platform CA the probe trusts (module setting platformCAFile)
    ca_key_pem: bytes  # its key: tests issue endpoint certificates with it, as cert-manager's CA issuer does
    fetcher_metrics_port: int = 0
    cluster_objects: list[tuple[str, str]] = field(default_factory=list)

    # -- objects ---------------------------------------------------------------------------

    def apply(self, obj: Obj | str) -> None:
        text = obj if isinstance(obj, str) else yaml.safe_dump(obj)
        self.kubectl(
            "apply", "--server-side", "--force-conflicts", "--field-manager=e2e", "-f", "-", input=text
        )

    def get(self, kind: str, name: str, namespace: str | None = None) -> Obj | None:
        args = ["get", kind, name, "-o", "json", "--ignore-not-found"]
        if namespace:
            args += ["-n", namespace]
        out = self.kubectl(*args).stdout.strip()
        return json.loads(out) if out else None

    def order(self, namespace: str, name: str) -> Obj:
        obj = self.get("inferenceservice", name, namespace)
        assert obj is not None, f"order {namespace}/{name} does not exist"
        return obj

    def create_order(self, namespace: str, name: str, model: Obj, *, klass: str = "default-llm") -> None:
        self.apply(
            {
                "apiVersion": "ai.deckhouse.io/v1alpha1",
                "kind": "InferenceService",
                "metadata": {"name": name, "namespace": namespace},
                "spec": {"inferenceServiceClassName": klass, "model": model},
            }
        )

    def create_class(self, spec: Obj, *, prefix: str = "c") -> str:
        """A cluster-scoped class with a unique name, deleted when the module ends."""
        name = f"e2e-{prefix}-{uuid.uuid4().hex[:6]}"
        base: Obj = {
            "modelPolicy": {"allowedEndpointTypes": ["Chat", "Embeddings", "Rerank"]},
            "placement": {"deviceClassNames": ["gpu.nvidia.com"], "sharingModes": ["Exclusive"]},
            "scaling": {"minReplicas": 1, "maxReplicas": 1},
            "exposure": {"type": "ClusterLocal", "authentication": "Token"},
            "recipes": ["vllm"],
        }
        base.update(spec)
        self.apply(
            {
                "apiVersion": "ai.deckhouse.io/v1alpha1",
                "kind": "InferenceServiceClass",
                "metadata": {"name": name},
                "spec": base,
            }
        )
        self.cluster_objects.append(("inferenceserviceclass", name))
        return name

    # -- waiting ---------------------------------------------------------------------------

    def condition(self, obj: Obj, type_: str) -> Obj:
        for c in obj.get("status", {}).get("conditions", []) or []:
            if c["type"] == type_:
                return dict(c)
        return {}

    def wait_reason(self, namespace: str, name: str, type_: str, reason: str, *, timeout: float = 60) -> Obj:
        def seen(o: Obj) -> bool:
            return self.condition(o, type_).get("reason") == reason

        return wait_for(
            lambda: self.order(namespace, name),
            seen,
            timeout=timeout,
            message=f"{namespace}/{name} condition {type_} with reason {reason}",
        )

    def wait_phase(self, namespace: str, name: str, phase: str, *, timeout: float = 60) -> Obj:
        return wait_for(
            lambda: self.order(namespace, name),
            lambda o: (
                o.get("status", {}).get("phase") == phase
                and o.get("status", {}).get("observedGeneration") == o["metadata"]["generation"]
            ),
            timeout=timeout,
            message=f"{namespace}/{name} phase {phase}",
        )

    def delete_namespace_and_wait(self, namespace: str) -> None:
        self.kubectl(
            "delete",
            "namespace",
            namespace,
            "--ignore-not-found",
            "--wait=true",
            "--timeout=300s",
            timeout=320,
        )


@pytest.fixture(scope="module")
def platform(
    cluster: Cluster,
    kubectl: Kubectl,
    api: k8s.ApiClient,
    crds: None,
    lws: lws_plane.Running,  # multi-node orders run on LeaderWorkerSet (tests/integration/lws_fixture.py)
    tmp_path_factory: pytest.TempPathFactory,
    request: pytest.FixtureRequest,
) -> Iterator[Platform]:
    from hack.cert_manager import crds_dir

    kubectl("apply", "--server-side", "--force-conflicts", "-f", str(crds_dir()))
    kubectl("wait", "--for=condition=Established", "--timeout=60s", "crd/certificates.cert-manager.io")
    kubectl("create", "namespace", NS, check=False)
    kubectl(
        "apply",
        "--server-side",
        "--force-conflicts",
        "--field-manager=e2e",
        "-f",
        str(ROOT / "deploy/base/platform/default-llm.yaml"),
        "-f",
        str(ROOT / "deploy/base/platform/vllm.yaml"),
    )
    tmp = ROOT / ".cluster" / "e2e-logs" / time.strftime("%Y%m%d-%H%M%S")
    tmp.mkdir(parents=True, exist_ok=True)
    # The controller runs as its shipped ServiceAccount, under the shipped RBAC.
    kubectl(
        "apply",
        "--server-side",
        "--force-conflicts",
        "--field-manager=e2e",
        "-k",
        str(ROOT / "deploy/base/rbac"),
    )
    sa_kubeconfig = service_account_kubeconfig(
        kubectl=cluster.kubectl_path,
        admin_kubeconfig=cluster.kubeconfig,
        namespace=NS,
        name="inference-controller",
        out=tmp / "controller.kubeconfig",
    )
    # It outlives the endpoint certificates (90 days by default), as the real platform CA (10 years)
    # does: cert-manager's CA issuer cuts a certificate short at its CA's expiry.
    ca_pem, ca_key = make_ca("inference platform CA (e2e)", days=3650)
    ca_file = tmp / "platform-ca.crt"
    ca_file.write_bytes(ca_pem)
    mirror = start_mirror(tokens=(HF_TOKEN,))
    runtime = start_runtime(kubeconfig=str(cluster.kubeconfig), cache_seconds=0.5)
    # The runtime serves only the certificate the platform issued into <order>-tls, so an order is
    # Ready only once its Certificate is issued: by the issuer stand-in, or, in a module that sets
    # PLATFORM_ISSUER = "cert-manager", by the real cert-manager it runs itself.
    issuer = (
        None
        if getattr(request.module, "PLATFORM_ISSUER", "standin") == "cert-manager"
        else start_issuer(
            ca_cert_pem=ca_pem, ca_key_pem=ca_key, kubeconfig=str(cluster.kubeconfig), period=0.5
        )
    )
    fetcher_port = free_port()
    settings = dict(
        SETTINGS,
        probeAddressOverride=runtime.address,
        platformCAFile=str(ca_file),
        hfEndpoint=mirror.url,
        modelFetcherMetricsAddressOverride=f"127.0.0.1:{fetcher_port}",
    )
    kubectl(
        "apply",
        "--server-side",
        "--force-conflicts",
        "--field-manager=e2e",
        "-f",
        "-",
        input=yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "inference-settings", "namespace": NS},
                "data": settings,
            }
        ),
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "KUBECONFIG"))}
    env["LOG_LEVEL"] = "INFO"
    controller = ControllerProcess(cluster=cluster, env=env, log_dir=tmp, kubeconfig=sa_kubeconfig)
    controller.start()
    p = Platform(cluster, kubectl, api, mirror, runtime, controller, ca_file, ca_key, fetcher_port)
    try:
        yield p
    finally:
        controller.stop()
        if issuer is not None:
            issuer.stop()
        runtime.stop()
        mirror.stop()
        for kind, name in p.cluster_objects:
            kubectl("delete", kind, name, "--ignore-not-found", "--wait=false", check=False)
        print(f"controller logs: {tmp}")


@pytest.fixture
def ns(platform: Platform, request: pytest.FixtureRequest) -> Iterator[str]:
    """A namespace for one test, deleted (and waited for, so its GPUs are free again) afterwards."""
    base = "".join(ch for ch in request.node.name.lower().replace("_", "-") if ch.isalnum() or ch == "-")
    name = f"e-{base[5:35].strip('-')}-{uuid.uuid4().hex[:4]}"
    platform.kubectl("create", "namespace", name)
    yield name
    platform.delete_namespace_and_wait(name)


def controller_writes(p: Platform, *, events: bool = False) -> float:
    """Write requests the controller counted (inference_controller_api_writes_total, every write it
    sends, the model-facts ConfigMap included): all but Events, or with ``events`` the Events alone."""
    total = 0.0
    for line in p.controller.metrics().splitlines():
        if line.startswith("inference_controller_api_writes_total{") and ('kind="Event"' in line) == events:
            total += float(line.rsplit(" ", 1)[1])
    return total


def hf(name: str, **extra: Any) -> Obj:
    return {"src": "HuggingFace", "ref": {"name": name, **extra.pop("ref", {})}, **extra}


Fetch = Callable[[], Obj]
