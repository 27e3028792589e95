"""The product around a running plane, for the chaos runs: what ``testkit/platform.py``
installs, plus the webhook under a restartable process and N leader-elected controller replicas.

Everything here is scoped to namespaces labelled ``LABEL`` (the webhook's namespace selector), so
a run never refuses other tests' writes while its webhook is down.
"""

from __future__ import annotations

import pathlib
import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from kubernetes import client as k8s
from prometheus_client.parser import text_string_to_metric_families

from controller.kube.client import load_api_client
from devtools.cluster.handle import Cluster, Kubectl, running_cluster
from devtools.cluster.identity import service_account_kubeconfig
from devtools.product.controller import ControllerProcess
from devtools.product.webhook import WebhookProcess, new_pki
from standins import local_webhook
from standins.hub_mirror import RunningMirror, start_mirror
from standins.issuer import start_issuer
from standins.runtime import RunningRuntime, make_ca, start_runtime
from testkit.platform import HF_TOKEN, NS, Platform, apply_settings, controller_env, install_product

ROOT = pathlib.Path(__file__).resolve().parents[2]
LABEL = "inference-chaos"  # namespaces of chaos runs carry LABEL=true; the webhook admits only them
WEBHOOK_NAME = "inference-webhook-chaos"
LEASE = "inference-controller"  # the one Lease the shipped Role lets the controller update
LEASE_ARGS = ("--lease-duration", "6", "--renew-deadline", "4", "--retry-period", "1")


def api_client(c: Cluster) -> k8s.ApiClient:
    client: k8s.ApiClient = load_api_client(kubeconfig=str(c.kubeconfig))
    return client


def installed_plane() -> tuple[Cluster, Kubectl, k8s.ApiClient]:
    """The local plane (started when down) with the product's CRDs, class, recipe and RBAC installed
    (``install``), its kubectl and an API client."""
    c = running_cluster()
    kubectl = Kubectl(c)
    install(kubectl)
    return c, kubectl, api_client(c)


def install(kubectl: Kubectl) -> None:
    """CRDs (ours and the catalog's), then what the e2e platform installs: cert-manager's CRDs, the
    bundled class and recipe, the RBAC."""
    crds = ROOT / "deploy" / "crds"
    kubectl(
        "apply", "--server-side", "--force-conflicts",
        "-f", str(crds / "inferenceservices.yaml"),
        "-f", str(crds / "inferenceserviceclasses.yaml"),
        "-f", str(crds / "inferencerecipes.yaml"),
        "-f", str(ROOT / "tests" / "manifests" / "catalog-crds.yaml"),
    )  # fmt: skip
    kubectl(
        "wait", "--for=condition=Established", "--timeout=60s",
        "crd/inferenceservices.ai.deckhouse.io", "crd/inferenceserviceclasses.ai.deckhouse.io",
        "crd/inferencerecipes.ai.deckhouse.io",
    )  # fmt: skip
    install_product(kubectl, field_manager="chaos")


class ChaosWebhook:
    """``python -m webhook`` registered for the chaos namespaces; ``restart`` keeps port and PKI."""

    def __init__(self, api: k8s.ApiClient, directory: pathlib.Path, *, label: str = LABEL) -> None:
        self.api = api
        self.label = label
        self.process = WebhookProcess(new_pki(directory))
        self.restarts = 0

    def start(self) -> None:
        self.process.start()
        configs = local_webhook.configurations(
            base_url=self.process.url,
            ca_bundle=self.process.pki.ca_bundle(),
            name=WEBHOOK_NAME,
            namespace_selector={"matchLabels": {self.label: "true"}},
            cluster_scoped_match_conditions=[
                {
                    "name": "chaos-only",
                    "expression": f"object != null && has(object.metadata.labels) && '{self.label}' in object.metadata.labels",
                }
            ],
        )
        local_webhook.register(self.api, configs)

    def stop(self) -> None:
        self.process.stop()

    def start_again(self) -> None:
        self.process.start()
        self.restarts += 1

    def unregister(self) -> None:
        local_webhook.unregister(self.api, WEBHOOK_NAME)

    def decisions(self) -> dict[str, float]:
        """The webhook's admission decisions so far, by outcome (all paths)."""
        out: dict[str, float] = {}
        with self.process.client() as c:
            text = c.get("/metrics").text
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                if sample.name == "inference_webhook_decisions_total":
                    outcome = sample.labels["outcome"]
                    out[outcome] = out.get(outcome, 0.0) + sample.value
        return out


@dataclass
class Exit:
    """A replica process that ended without being killed by the chaos (lease lost, crash)."""

    name: str
    returncode: int
    at: float


@dataclass
class Replicas:
    """N controller processes on one Lease, kept at N like a Deployment would (``supervise``)."""

    cluster: Cluster
    env: dict[str, str]
    log_dir: pathlib.Path
    kubeconfig: pathlib.Path
    count: int = 2
    procs: list[ControllerProcess] = field(default_factory=list)
    exits: list[Exit] = field(default_factory=list)
    kills: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    _killed: set[int] = field(default_factory=set)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> None:
        for i in range(self.count):
            proc = ControllerProcess(
                kubeconfig=self.kubeconfig,
                env=self.env,
                log_dir=self.log_dir,
                args=("--leader-elect", "--lease-name", LEASE, *LEASE_ARGS,
                      "--identity", f"chaos-{i}-{uuid.uuid4().hex[:4]}"),
                name=f"replica-{i}",
            )  # fmt: skip
            self.procs.append(proc)
        with ThreadPoolExecutor(max_workers=self.count) as pool:  # both wait for /readyz at once
            list(pool.map(lambda p: p.start(), self.procs))
        self._thread = threading.Thread(target=self._supervise, name="replicas", daemon=True)
        self._thread.start()

    def leader(self) -> ControllerProcess | None:
        for p in list(self.procs):
            try:
                if _leading(p):
                    return p
            except OSError:
                continue
        return None

    def kill_leader(self) -> str | None:
        """SIGKILL the replica that leads now; the supervisor starts it again. Its name, or None."""
        with self.lock:
            leader = self.leader()
            if leader is None or leader.proc is None:
                return None
            self._killed.add(leader.proc.pid)
            leader.kill()
            self.kills += 1
            return leader.name

    def _supervise(self) -> None:
        while not self._stop.wait(0.5):
            for p in self.procs:
                with self.lock:
                    if p.proc is None or p.proc.poll() is None or self._stop.is_set():
                        continue
                    if p.proc.pid not in self._killed:
                        self.exits.append(Exit(p.name, p.proc.returncode, time.time()))
                try:
                    p.start()
                except BaseException as e:  # pytest.fail raises outside Exception; keep supervising
                    self.exits.append(Exit(f"{p.name} (restart failed: {e})", -1, time.time()))

    def logs(self) -> list[pathlib.Path]:
        return sorted(self.log_dir.glob("replica-*.log"))

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=120)
        for p in self.procs:
            p.stop()


def _leading(c: ControllerProcess) -> bool:
    if c.proc is None or c.proc.poll() is not None or not c.metrics_port:
        return False
    for line in c.metrics().splitlines():
        if line.startswith("inference_controller_leader "):
            return float(line.split()[1]) == 1.0
    return False


@dataclass
class Stack:
    cluster: Cluster
    kubectl: Kubectl
    api: k8s.ApiClient
    mirror: RunningMirror
    runtime: RunningRuntime
    webhook: ChaosWebhook
    replicas: Replicas
    log_dir: pathlib.Path
    extra: dict[str, Any] = field(default_factory=dict)


@contextmanager
def running(log_dir: pathlib.Path, *, replicas: int = 2, label: str = LABEL) -> Iterator[Stack]:
    """The whole product on the running plane, stopped (and the webhook unregistered) at the end."""
    c, kubectl, api = installed_plane()
    log_dir.mkdir(parents=True, exist_ok=True)
    sa = service_account_kubeconfig(
        kubectl=c.kubectl_path, admin_kubeconfig=c.kubeconfig, namespace=NS,
        name="inference-controller", out=log_dir / "controller.kubeconfig",
    )  # fmt: skip
    ca_pem, ca_key = make_ca("inference platform CA (chaos)")
    ca_file = log_dir / "platform-ca.crt"
    ca_file.write_bytes(ca_pem)
    mirror = start_mirror(tokens=(HF_TOKEN,))
    runtime = start_runtime(kubeconfig=str(c.kubeconfig), cache_seconds=0.5)
    # The runtime serves only the <order>-tls that the issuer stand-in (cert-manager's part) writes.
    issuer = start_issuer(ca_cert_pem=ca_pem, ca_key_pem=ca_key, kubeconfig=str(c.kubeconfig), period=0.5)
    apply_settings(
        kubectl,
        field_manager="chaos",
        probeAddressOverride=runtime.address,
        platformCAFile=str(ca_file),
        hfEndpoint=mirror.url,
    )
    webhook = ChaosWebhook(api, log_dir / "webhook", label=label)
    reps = Replicas(cluster=c, env=controller_env(), log_dir=log_dir, kubeconfig=sa, count=replicas)
    try:
        webhook.start()
        reps.start()
        yield Stack(c, kubectl, api, mirror, runtime, webhook, reps, log_dir)
    finally:
        reps.stop()
        webhook.unregister()
        webhook.stop()
        issuer.stop()
        runtime.stop()
        mirror.stop()
        api.close()  # type: ignore[no-untyped-call]


@contextmanager
def on_platform(platform: Platform, *, replicas: int = 2, label: str = LABEL) -> Iterator[Stack]:
    """A stack on the e2e ``platform`` fixture (its mirror, runtime and settings): its controller is
    stopped for N leader-elected replicas and a restartable webhook, and started again after."""
    c = platform.controller
    log_dir = c.log_dir / f"{label}-{uuid.uuid4().hex[:4]}"
    log_dir.mkdir(parents=True, exist_ok=True)
    assert c.kubeconfig is not None
    c.stop()
    webhook = ChaosWebhook(platform.api, log_dir / "webhook", label=label)
    reps = Replicas(
        cluster=platform.cluster, env=c.env, log_dir=log_dir, kubeconfig=c.kubeconfig, count=replicas
    )
    try:
        webhook.start()
        reps.start()
        yield Stack(
            platform.cluster,
            platform.kubectl,
            platform.api,
            platform.mirror,
            platform.runtime,
            webhook,
            reps,
            log_dir,
        )
    finally:
        reps.stop()
        webhook.unregister()
        webhook.stop()
        platform.mirror.clear_faults()
        c.start()
