"""``python -m controller``: wire settings, informers, event mapping, the work queue, leader election,
metrics and health around the reconciler, and run until SIGTERM/SIGINT.

Informers start at once (a standby replica keeps warm caches and answers /readyz); workers start
only while this replica leads. Losing the lease stops the process, as controller-runtime does, so
two replicas never reconcile at once.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Sequence
from typing import Any

from prometheus_client import CollectorRegistry

from controller import wiring
from controller.health import HealthServer
from controller.hub import HubClient
from controller.kube import apply as kapi
from controller.kube import errors as kerr
from controller.kube.client import RESOURCES, load_api_client
from controller.kube.informer import Informer
from controller.kube.leader import LeaderElector
from controller.kube.queue import WorkQueue
from controller.metrics import ControllerMetrics
from controller.probe import Prober
from controller.reconciler import Reconciler
from controller.settings import Settings, SettingsError, parse_settings

log = logging.getLogger("controller")

# cache name -> (apiVersion, kind, label selector)
CACHES: dict[str, tuple[str, str, str | None]] = {
    "orders": ("ai.deckhouse.io/v1alpha1", "InferenceService", None),
    "classes": ("ai.deckhouse.io/v1alpha1", "InferenceServiceClass", None),
    "recipes": ("ai.deckhouse.io/v1alpha1", "InferenceRecipe", None),
    "secrets": ("v1", "Secret", None),
    "deployments": ("apps/v1", "Deployment", "ai.deckhouse.io/inference-service"),
    "services": ("v1", "Service", "ai.deckhouse.io/inference-service"),
    "pvcs": ("v1", "PersistentVolumeClaim", "ai.deckhouse.io/inference-service"),
    "pods": ("v1", "Pod", "ai.deckhouse.io/inference-service"),
    "hpas": ("autoscaling/v2", "HorizontalPodAutoscaler", "ai.deckhouse.io/inference-service"),
    "ingresses": ("networking.k8s.io/v1", "Ingress", "ai.deckhouse.io/inference-service"),
    "certificates": ("cert-manager.io/v1", "Certificate", "ai.deckhouse.io/inference-service"),
    "claimtemplates": ("resource.k8s.io/v1", "ResourceClaimTemplate", "ai.deckhouse.io/inference-service"),
    "deviceclasses": ("resource.k8s.io/v1", "DeviceClass", None),
    "resourceslices": ("resource.k8s.io/v1", "ResourceSlice", None),
    "resourceclaims": ("resource.k8s.io/v1", "ResourceClaim", None),
}
OPTIONAL_CACHES = frozenset({"certificates", "models", "clustermodels"})
CATALOG_CACHES: dict[str, tuple[str, str, str | None]] = {
    "models": ("ai.deckhouse.io/v1alpha1", "Model", None),
    "clustermodels": ("ai.deckhouse.io/v1alpha1", "ClusterModel", None),
}


class InformerStore:
    """The reconciler's read view over the informers."""

    def __init__(self, informers: dict[str, Informer]) -> None:
        self._informers = informers

    def get(self, cache: str, namespace: str | None, name: str) -> dict[str, Any] | None:
        inf = self._informers.get(cache)
        return inf.get(namespace, name) if inf is not None else None

    def list(self, cache: str, namespace: str | None = None) -> list[dict[str, Any]]:
        inf = self._informers.get(cache)
        return inf.list(namespace) if inf is not None else []


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m controller", description=__doc__.splitlines()[0] if __doc__ else None
    )
    p.add_argument(
        "--kubeconfig", default=os.environ.get("KUBECONFIG"), help="kubeconfig; in-cluster when unset"
    )
    p.add_argument(
        "--namespace",
        default=os.environ.get("POD_NAMESPACE", "d8-inference"),
        help="namespace of the module settings ConfigMap and of the leader-election Lease",
    )
    p.add_argument(
        "--settings-configmap", default="inference-settings", help="name of the module settings ConfigMap"
    )
    p.add_argument("--workers", type=int, default=4, help="reconcile workers")
    p.add_argument("--metrics-port", type=int, default=8080, help="port of /metrics (0: off)")
    p.add_argument("--health-port", type=int, default=8081, help="port of /healthz and /readyz (0: off)")
    p.add_argument("--bind-address", default="0.0.0.0", help="address the metrics and health servers bind")
    p.add_argument(
        "--leader-elect",
        dest="leader_elect",
        action="store_true",
        default=True,
        help="elect a leader on a Lease (default)",
    )
    p.add_argument("--no-leader-elect", dest="leader_elect", action="store_false", help="run without a Lease")
    p.add_argument("--lease-name", default="inference-controller")
    p.add_argument("--lease-duration", type=float, default=15.0, help="seconds a leader's Lease is valid")
    p.add_argument("--renew-deadline", type=float, default=10.0, help="seconds a leader may fail to renew")
    p.add_argument("--retry-period", type=float, default=2.0, help="seconds between Lease attempts")
    p.add_argument(
        "--identity", default=os.environ.get("POD_NAME") or f"{socket.gethostname()}-{os.getpid()}"
    )
    p.add_argument("--log-level", default=os.environ.get("LOG_LEVEL", "INFO"))
    return p.parse_args(argv)


def load_settings(api: Any, namespace: str, name: str) -> Settings:
    cm = kapi.get(api, "v1", "ConfigMap", namespace=namespace, name=name)
    if cm is None:
        log.warning("module settings ConfigMap %s/%s not found; using defaults", namespace, name)
    return parse_settings((cm or {}).get("data"), os.environ)


class Controller:
    """The running process: informers feed the queue, workers drain it."""

    def __init__(self, args: argparse.Namespace, api: Any, settings: Settings) -> None:
        self.args = args
        self.api = api
        self.settings = settings
        self.stop_event = threading.Event()
        self.registry = CollectorRegistry()
        self.metrics = ControllerMetrics(self.registry)
        self.queue: WorkQueue[tuple[str, str, str]] = WorkQueue()
        caches = dict(CACHES)
        if settings.catalog_enabled:
            caches.update(CATALOG_CACHES)
        self.informers = {
            name: Informer(
                api,
                RESOURCES[(api_version, kind)],
                label_selector=selector,
                handler=self._handler(name),
            )
            for name, (api_version, kind, selector) in caches.items()
        }
        self.store = InformerStore(self.informers)
        self.hub = HubClient(endpoint=settings.hf_endpoint, on_call=self._count_hub_call)
        self.prober = Prober(
            ca_file=settings.platform_ca_file,
            address_override=settings.probe_address_override,
            timeout=settings.probe_timeout_seconds,
        )
        self.reconciler = Reconciler(
            api=api,
            store=self.store,
            hub=self.hub,
            prober=self.prober,
            settings=settings,
            metrics=self.metrics,
        )
        self.leading = threading.Event()
        self.workers: list[threading.Thread] = []

    def _count_hub_call(self, outcome: str) -> None:
        self.metrics.hub_calls.labels(outcome=outcome).inc()

    def _handler(self, cache: str) -> Any:
        def handle(event: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
            orders = self.informers["orders"].list() if cache != "orders" else []
            keys = wiring.keys_for(cache, obj, orders)
            if cache in ("recipes", "deviceclasses"):
                keys += wiring.class_keys(self.informers["classes"].list())
            for key in keys:
                self.queue.add(key)
            self.metrics.queue_depth.set(len(self.queue))

        return handle

    def synced(self) -> bool:
        return all(i.has_synced for n, i in self.informers.items() if n not in OPTIONAL_CACHES)

    def start_informers(self) -> None:
        for inf in self.informers.values():
            inf.start()
        for name, inf in self.informers.items():
            if name in OPTIONAL_CACHES:
                continue  # an API that may not be installed (cert-manager, the catalog) must not hold the start
            if not inf.wait_synced(timeout=60):
                log.warning("informer %s has not synced after 60s", name)

    def start_workers(self) -> None:
        self.leading.set()
        self.metrics.leader.set(1)
        log.info("leading: starting %d workers", self.args.workers)
        for o in self.informers["orders"].list():
            self.queue.add(wiring.order_key(o))
        for c in self.informers["classes"].list():
            self.queue.add(("class", "", c["metadata"]["name"]))
        for i in range(self.args.workers):
            t = threading.Thread(target=self._work, name=f"worker-{i}", daemon=True)
            t.start()
            self.workers.append(t)
        threading.Thread(target=self._resync, name="resync", daemon=True).start()

    def _resync(self) -> None:
        while not self.stop_event.wait(self.settings.resync_seconds):
            for o in self.informers["orders"].list():
                self.queue.add(wiring.order_key(o))
            self._publish_phases()

    def _publish_phases(self) -> None:
        counts: dict[str, int] = {}
        for o in self.informers["orders"].list():
            phase = (o.get("status") or {}).get("phase") or "Pending"
            counts[phase] = counts.get(phase, 0) + 1
        for phase in ("Pending", "Ready", "Degraded", "Failed"):
            self.metrics.orders_by_phase.labels(phase=phase).set(counts.get(phase, 0))

    def _work(self) -> None:
        while not self.stop_event.is_set():
            key = self.queue.get(timeout=1.0)
            if key is None:
                continue
            kind, ns, name = key
            start = time.perf_counter()
            result = "ok"
            try:
                if kind == "order":
                    again = self.reconciler.reconcile_order(ns, name)
                else:
                    again = self.reconciler.reconcile_class(name)
                self.queue.forget(key)
                if again is not None:
                    self.queue.add_after(key, again)
            except kerr.Conflict:
                result = "conflict"
                self.queue.add_rate_limited(key)
            except kerr.NotFound as e:
                result = "gone"
                log.info("reconcile %s %s/%s: %s; dropped", kind, ns, name, e)
                self.queue.forget(key)
            except kerr.KubeError as e:
                result = "error"
                log.warning("reconcile %s %s/%s failed; requeued with backoff: %s", kind, ns, name, e)
                self.queue.add_rate_limited(key)
            except Exception:
                result = "error"
                log.exception("reconcile %s %s/%s failed; requeued with backoff", kind, ns, name)
                self.queue.add_rate_limited(key)
            finally:
                self.queue.done(key)
                self.metrics.reconcile_duration.labels(result=result).observe(time.perf_counter() - start)
                self.metrics.queue_depth.set(len(self.queue))
                if kind == "order":
                    self._publish_phases()

    def stop(self) -> None:
        self.stop_event.set()
        self.queue.shutdown()
        for inf in self.informers.values():
            inf.stop()
        self.prober.close()


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(
        level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    api = load_api_client(kubeconfig=args.kubeconfig)
    try:
        settings = load_settings(api, args.namespace, args.settings_configmap)
    except SettingsError as e:
        log.error("%s", e)
        return 2
    try:
        ctl = Controller(args, api, settings)
    except OSError as e:  # the platform CA bundle named by a setting cannot be read
        log.error(
            "module setting `platformCAFile`: cannot read %r: %s", settings.platform_ca_file, e.strerror or e
        )
        return 2
    health = HealthServer(
        registry=ctl.registry,
        metrics_port=args.metrics_port,
        health_port=args.health_port,
        bind_address=args.bind_address,
        ready=ctl.synced,
    )
    health.start()
    done = threading.Event()

    def on_signal(signum: int, _frame: object) -> None:
        log.info("signal %d: shutting down", signum)
        done.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    ctl.start_informers()
    elector: LeaderElector | None = None
    if args.leader_elect:
        elector = LeaderElector(
            api,
            namespace=args.namespace,
            name=args.lease_name,
            identity=args.identity,
            lease_duration=args.lease_duration,
            renew_deadline=args.renew_deadline,
            retry_period=args.retry_period,
            on_started_leading=ctl.start_workers,
            on_stopped_leading=done.set,
        )
        elector.start()
    else:
        ctl.start_workers()
    done.wait()
    ctl.stop()
    if elector is not None:
        elector.stop()
    health.stop()
    log.info("stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
