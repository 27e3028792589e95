"""The product running against the real local plane, for the e2e tests.

``running_platform`` installs cert-manager's CRDs, the bundled class and recipe, the shipped RBAC and
the module settings; runs the real cert-manager with the shipped endpoint PKI (testkit/endpoint_pki.py:
every order's Certificate is issued by cert-manager, and the probe trusts the CA the platform's
Secret carries); starts the Hub mirror and the runtime stand-in in-process; and runs the controller
as a real process (devtools/product/controller.py) under its ServiceAccount. The controller's probe
reaches the stand-in through the documented module setting ``probeAddressOverride``, not a test-only
branch; likewise its scrapes of a running model fetcher go to ``fetcher_metrics_port`` on loopback
through ``modelFetcherMetricsAddressOverride`` (a test runs the real fetcher there; KWOK pod IPs are not
reachable). ``Platform`` is the handle: apply and read objects, wait for an order's phase or reason.

Our own CRDs are installed before (the ``crds`` fixture of tests/integration/conftest.py, or
bench.chaos's install).
"""

from __future__ import annotations

import base64
import json
import os
import pathlib
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from typing import Any

import yaml
from kubernetes import client as k8s

from devtools import procs, tiny_models
from devtools.cluster.components import cert_manager, keda
from devtools.cluster.handle import Cluster, Kubectl
from devtools.cluster.identity import service_account_kubeconfig
from devtools.product.controller import NAMESPACE, SETTINGS_CONFIGMAP, ControllerProcess
from devtools.wait import wait_for
from standins.hub_mirror import RunningMirror, start_mirror
from standins.runtime import RunningRuntime, start_runtime
from testkit.activator import RunningActivator, running_activator
from testkit.autoscaling import Autoscaling, running_autoscaling
from testkit.endpoint_pki import RealIssuer, apply_endpoint_pki, running_issuer
from testkit.load import Target

ROOT = pathlib.Path(__file__).resolve().parents[1]
NS = NAMESPACE
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


@dataclass
class Platform:
    cluster: Cluster
    kubectl: Kubectl
    api: k8s.ApiClient
    mirror: RunningMirror
    runtime: RunningRuntime
    controller: ControllerProcess
    issuer: RealIssuer  # cert-manager's controller; ``issuer.paused()`` stops issuing for a block
    ca_file: pathlib.Path  # the platform CA the probe trusts (module setting platformCAFile)
    ca_key_pem: bytes  # its key (cert-manager's CA issuer's): for certificates written by hand
    fetcher_metrics_port: int = 0
    cluster_objects: list[tuple[str, str]] = field(default_factory=list)
    plane_runner: procs.Background | None = None  # the real vLLM behind tiny-model orders, if started
    autoscaling: Autoscaling | None = None  # Prometheus and KEDA, with ``autoscaling=True``
    activator: RunningActivator | None = None  # the activator process, with ``activator=True``

    @property
    def prometheus_url(self) -> str | None:
        """Where Prometheus answers (``http://127.0.0.1:PORT``), with ``autoscaling=True``."""
        return self.autoscaling.prometheus_url if self.autoscaling else None

    @property
    def activator_url(self) -> str | None:
        """The activator's admin listener (``http://HOST:PORT``: ``/metrics``), with ``activator=True``."""
        return self.activator.url if self.activator else None

    def served_by(self, namespace: str, name: str) -> int:
        """How many real vLLM processes serve the order: the plane runner routes a pod only once the
        rendered readiness probe passed on its process. KWOK marks a new pod Ready the moment it is
        scheduled, before the runner adopts it and reports it not ready, so a Deployment's
        readyReplicas alone can count, for a moment, a replica that serves nothing."""
        for r in self.runtime.routes():
            if r["namespace"] == namespace and r["name"] == name:
                backends = r["backends"]
                return len(backends) if isinstance(backends, list) else 0
        return 0

    def target(self, namespace: str, name: str, *, token: str | None = None) -> Target:
        """A client's view of the order through the entry address: its endpoint host (SNI and
        ``Host``), its token from ``<order>-auth`` (or ``token``), and the platform CA."""
        obj = self.order(namespace, name)
        host = obj["status"]["endpoint"]["url"].removeprefix("https://").split("/")[0].split(":")[0]
        if token is None:
            raw = self.kubectl("get", "secret", obj["status"]["authSecretName"], "-n", namespace,
                               "-o", "jsonpath={.data.token}").stdout  # fmt: skip
            token = base64.b64decode(raw).decode()
        return Target(self.runtime.address, host, token, str(self.ca_file))

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


def install_product(kubectl: Kubectl, *, field_manager: str) -> None:
    """cert-manager's and KEDA's CRDs (Established: every single-node order has a ScaledObject), the namespace, the bundled class and recipe, the shipped RBAC
    (the controller runs as its ServiceAccount)."""
    kubectl("apply", "--server-side", "--force-conflicts", "-f", str(cert_manager.crds_dir()))
    kubectl("apply", "--server-side", "--force-conflicts", "-f", str(keda.crds_dir()))
    kubectl(
        "wait", "--for=condition=Established", "--timeout=60s",
        "crd/certificates.cert-manager.io", "crd/scaledobjects.keda.sh",
    )  # fmt: skip
    kubectl("create", "namespace", NS, check=False)
    fm = f"--field-manager={field_manager}"
    kubectl(
        "apply", "--server-side", "--force-conflicts", fm,
        "-f", str(ROOT / "deploy/base/platform/default-llm.yaml"),
        "-f", str(ROOT / "deploy/base/platform/vllm.yaml"),
    )  # fmt: skip
    kubectl("apply", "--server-side", "--force-conflicts", fm, "-k", str(ROOT / "deploy/base/rbac"))


def apply_settings(kubectl: Kubectl, *, field_manager: str, **settings: str) -> None:
    """The module settings: ``SETTINGS`` with ``settings`` over them."""
    doc = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": SETTINGS_CONFIGMAP, "namespace": NS},
        "data": dict(SETTINGS, **settings),
    }
    kubectl(
        "apply", "--server-side", "--force-conflicts", f"--field-manager={field_manager}", "-f", "-",
        input=yaml.safe_dump(doc),
    )  # fmt: skip


def controller_env() -> dict[str, str]:
    """This environment without HF_* and KUBECONFIG (the settings and the kubeconfig say those)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "KUBECONFIG"))}
    env["LOG_LEVEL"] = "INFO"
    return env


@contextmanager
def running_platform(
    cluster: Cluster,
    kubectl: Kubectl,
    api: k8s.ApiClient,
    *,
    hostile_hub: bool = False,
    real_runtime: bool = False,
    autoscaling: bool = False,
    activator: bool = False,
    activator_max_hold_seconds: float = 300.0,
) -> Iterator[Platform]:
    """The product installed and running until the ``with`` block ends; logs under .cluster/e2e-logs.

    cert-manager issues every order's Certificate from the shipped chain (testkit/endpoint_pki.py),
    and the runtime stand-in serves only the certificate in ``<order>-tls``, so an order is Ready
    only once cert-manager has issued its Certificate. ``hostile_hub``: the mirror also serves the
    hostile repositories of standins/hub_mirror/hostile.py. ``real_runtime``: the mirror also serves the
    tiny models (devtools/tiny_models, built first if missing), and the plane runner
    (``python -m devtools.podrunner``, devtools/podrunner/plane.py) runs their orders' pods on a real
    vLLM behind the stand-in's address. ``autoscaling``: Prometheus and KEDA run on the plane
    (testkit/autoscaling.py), Prometheus scraping each order's pod at the stand-in's control address;
    ``Platform.prometheus_url`` says where to query it. ``activator``: the activator runs as a process
    under its ServiceAccount (testkit/activator.py), forwarding to the stand-in's entry address, listed
    in the module namespace as the Service ``inference-activator`` and scraped by Prometheus when it
    runs; ``Platform.activator`` is its handle. The time cert-manager took to start and the PKI to be issued
    are written to ``timings.json`` in the log directory."""
    install_product(kubectl, field_manager="e2e")
    tmp = ROOT / ".cluster" / "e2e-logs" / time.strftime("%Y%m%d-%H%M%S")
    tmp.mkdir(parents=True, exist_ok=True)
    sa_kubeconfig = service_account_kubeconfig(
        kubectl=cluster.kubectl_path,
        admin_kubeconfig=cluster.kubeconfig,
        namespace=NS,
        name="inference-controller",
        out=tmp / "controller.kubeconfig",
    )
    with ExitStack() as stack:
        issuer = stack.enter_context(running_issuer(cluster, kubectl, tmp / "cert-manager"))
        pki = apply_endpoint_pki(kubectl, field_manager="e2e")
        (tmp / "timings.json").write_text(
            json.dumps({"cert_manager_ready_s": issuer.ready_seconds[0], "endpoint_pki_s": pki.seconds})
        )
        ca_file = tmp / "platform-ca.crt"
        ca_file.write_bytes(pki.ca_pem)
        if real_runtime:
            tiny_models.ensure_built()
        mirror = start_mirror(tokens=(HF_TOKEN,), hostile=hostile_hub, tiny=real_runtime)
        stack.callback(mirror.stop)
        runtime = start_runtime(kubeconfig=str(cluster.kubeconfig), cache_seconds=0.5)
        stack.callback(runtime.stop)
        scaling: Autoscaling | None = None
        if autoscaling:
            target = runtime.control_url.removeprefix("http://")
            scaling = stack.enter_context(running_autoscaling(target=target))
        running: RunningActivator | None = None
        if activator:
            running = stack.enter_context(
                running_activator(
                    cluster,
                    kubectl,
                    upstream=runtime.address,
                    ca_file=ca_file,
                    log_dir=tmp / "activator",
                    max_hold_seconds=activator_max_hold_seconds,
                    scrape=scaling is not None,
                )
            )
        fetcher_port = procs.free_port()
        apply_settings(
            kubectl,
            field_manager="e2e",
            probeAddressOverride=runtime.address,
            platformCAFile=str(ca_file),
            hfEndpoint=mirror.url,
            modelFetcherMetricsAddressOverride=f"127.0.0.1:{fetcher_port}",
            **({"prometheusServerAddress": scaling.prometheus_url} if scaling else {}),
        )
        controller = ControllerProcess(kubeconfig=sa_kubeconfig, env=controller_env(), log_dir=tmp)
        p = Platform(
            cluster, kubectl, api, mirror, runtime, controller, issuer, ca_file, pki.ca_key_pem, fetcher_port
        )
        p.autoscaling = scaling
        p.activator = running
        if real_runtime:
            p.plane_runner = start_plane_runner(cluster, runtime, tmp / "podrunner")
            stack.callback(stop_plane_runner, p.plane_runner, tmp / "podrunner")
        try:
            controller.start()
            yield p
        finally:
            controller.stop()
            for kind, name in p.cluster_objects:
                kubectl("delete", kind, name, "--ignore-not-found", "--wait=false", check=False)
            print(f"controller logs: {tmp}")


PLANE_RUNNER = "plane-runner"


def start_plane_runner(cluster: Cluster, runtime: RunningRuntime, state: pathlib.Path) -> procs.Background:
    """``python -m devtools.podrunner`` against the plane, routing through ``runtime``; up once it says so."""
    bg = procs.start(
        PLANE_RUNNER,
        [sys.executable, "-m", "devtools.podrunner", "--kubeconfig", str(cluster.kubeconfig),
         "--standin-control", runtime.control_url, "--state", str(state)],
        state=state,
        cwd=ROOT,
    )  # fmt: skip
    procs.wait_for_line(bg, "plane runner up", timeout=600)
    return bg


def stop_plane_runner(bg: procs.Background, state: pathlib.Path) -> None:
    """SIGTERM: the runner stops every pod's processes, then exits (reaped here)."""
    procs.stop(PLANE_RUNNER, state=state, grace=60)
    if bg.process is not None:
        bg.process.wait(timeout=30)


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
