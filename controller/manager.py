"""The running controller: informers feed the ledger and the queue, workers drain the queue.

Informers start at once (a standby replica keeps warm caches and answers /readyz); workers start
only while this replica leads. Before they start, the ledger has seen every slice and claim and
every plan in force that is not allocated yet holds its place again.
"""

from __future__ import annotations

import argparse
import logging
import threading
import time
from typing import Any

from prometheus_client import CollectorRegistry

from controller import wiring
from controller.act import Actor
from controller.config.settings import Settings
from controller.kinds import Cache, Fanout, watched
from controller.kube import errors as kerr
from controller.kube.client import RESOURCES, on_write
from controller.kube.events import EventRecorder
from controller.kube.informer import Informer
from controller.kube.queue import WorkQueue
from controller.live.probe import Prober
from controller.live.probes import ProbeBook
from controller.live.progress_book import ProgressBook
from controller.metrics import ControllerMetrics
from controller.modelhub.client import HubClient
from controller.modelhub.store import ConfigMapFactsStore
from controller.observe import Observer
from controller.planner.ledger import Ledger
from controller.reconciler import Reconciler
from controller.store import Store

log = logging.getLogger("controller")
Key = tuple[str, str, str]


PUBLISH_SECONDS = 2.0  # the phase, device and over-commit gauges


class Controller:
    def __init__(self, args: argparse.Namespace, api: Any, settings: Settings) -> None:
        self.args = args
        self.settings = settings
        self.stop_event = threading.Event()
        self.registry = CollectorRegistry()
        self.metrics = ControllerMetrics(self.registry)
        on_write(api, lambda kind, verb: self.metrics.api_writes.labels(kind=kind, verb=verb).inc())
        self.queue: WorkQueue[Key] = WorkQueue()
        self.waiting = wiring.WaitingOrders()
        self.ledger = Ledger()
        self.kinds = {k.cache: k for k in watched(catalog_enabled=settings.catalog_enabled)}
        self.informers = {
            cache: Informer(
                api,
                RESOURCES[(k.api_version, k.kind)],
                namespace=args.namespace if k.module_namespace else None,
                label_selector=k.label_selector,
                index_label=k.label_selector if k.label_selector and "=" not in k.label_selector else None,
                handler=self._handler(cache),
                transform=k.transform,
            )
            for cache, k in self.kinds.items()
        }
        self.store = Store(self.informers)
        self.hub = HubClient(
            endpoint=settings.hf_endpoint,
            store=ConfigMapFactsStore(api, args.namespace),
            on_call=self._count_hub_call,
        )
        self.prober = Prober(
            ca_file=settings.platform_ca_file,
            address_override=settings.probe_address_override,
            timeout=settings.probe_timeout_seconds,
        )
        self.probes = ProbeBook(
            self.prober,
            on_done=lambda key: self.queue.add(("order", *key)),
            on_result=lambda ok: self.metrics.probes.labels(outcome="success" if ok else "failure").inc(),
        )
        self.progress = ProgressBook(
            on_done=lambda key: self.queue.add(("order", *key)),
            address_override=settings.model_fetcher_metrics_address_override,
        )
        self.reconciler = Reconciler(
            observer=Observer(
                api=api,
                store=self.store,
                hub=self.hub,
                probes=self.probes,
                progress=self.progress,
                ledger=self.ledger,
                settings=settings,
                applied_plan=lambda key: self.reconciler.applied.get(key),
                lapsed=lambda key: key in self.reconciler.lapsed,
            ),
            actor=Actor(api=api, metrics=self.metrics),
        )
        self.events = EventRecorder(self.reconciler.actor.send_event, on_drop=self.metrics.events_dropped.inc)
        self.reconciler.actor.recorder = self.events
        self.reconciler.on_capacity = self._requeue_waiting
        self.leading = threading.Event()
        self.workers: list[threading.Thread] = []

    def _requeue_waiting(self) -> None:
        for key in wiring.waiting_orders(self.waiting.orders(), self._priorities()):
            self.queue.add(key)

    def _count_hub_call(self, outcome: str) -> None:
        self.metrics.hub_calls.labels(outcome=outcome).inc()

    def _handler(self, cache: Cache) -> Any:
        fanout = self.kinds[cache].fanout

        def handle(event: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
            deleted = event == "DELETED"
            grew = False
            if cache is Cache.ORDERS:
                self.waiting.observe(event, obj)
            elif cache is Cache.RESOURCE_SLICES:
                before = self.ledger.epoch
                self.ledger.on_slice(obj, deleted=deleted)
                grew = self.ledger.epoch > before
            elif cache is Cache.RESOURCE_CLAIMS:
                grew = self.ledger.on_claim(obj, deleted=deleted)
            elif cache is Cache.DEVICE_CLASSES:
                self.ledger.on_device_class(obj, deleted=deleted)
            if fanout is Fanout.NONE or not self.leading.is_set():
                return
            if fanout is Fanout.CAPACITY and not grew and wiring.order_of(obj) is None:
                return  # a slice or a foreign claim that freed nothing
            if fanout is Fanout.SELF:
                orders = []
            elif fanout is Fanout.CAPACITY:
                orders = self.waiting.orders()  # only waiting orders are requeued on capacity
            else:
                orders = self.informers[Cache.ORDERS].list()
            keys = wiring.keys_for(cache, obj, orders, capacity_grew=grew, priorities=self._priorities())
            if fanout is Fanout.EVERYTHING or (fanout is Fanout.CAPACITY and grew):
                keys += wiring.class_keys(self.informers[Cache.CLASSES].list())
            urgent = cache is Cache.ORDERS and not deleted and wiring.unanswered(obj)
            for key in keys:
                self.queue.add(key, urgent=urgent)
            self.metrics.queue_depth.set(len(self.queue))

        return handle

    def _priorities(self) -> dict[str, int]:
        inf = self.informers.get(Cache.PRIORITY_CLASSES)
        return {p["metadata"]["name"]: int(p.get("value") or 0) for p in inf.list()} if inf else {}

    def synced(self) -> bool:
        return all(i.has_synced for c, i in self.informers.items() if not self.kinds[c].optional)

    def start_informers(self) -> None:
        for inf in self.informers.values():
            inf.start()
        for cache, inf in self.informers.items():
            if self.kinds[cache].optional:
                continue  # an API that may be absent (cert-manager, the catalog) must not hold the start
            if not inf.wait_synced(timeout=60):
                log.warning("informer %s has not synced after 60s", cache)

    def start_workers(self) -> None:
        self.reconciler.rebuild_reservations()
        self.leading.set()
        self.metrics.leader.set(1)
        log.info("leading: starting %d workers", self.args.workers)
        for o in self.informers[Cache.ORDERS].list():
            self.queue.add(wiring.order_key(o), urgent=wiring.unanswered(o))
        for c in self.informers[Cache.CLASSES].list():
            self.queue.add(("class", "", c["metadata"]["name"]))
        for i in range(self.args.workers):
            t = threading.Thread(target=self._work, name=f"worker-{i}", daemon=True)
            t.start()
            self.workers.append(t)
        threading.Thread(target=self._resync, name="resync", daemon=True).start()
        threading.Thread(target=self._publisher, name="publisher", daemon=True).start()

    def _resync(self) -> None:
        while not self.stop_event.wait(self.settings.resync_seconds):
            for o in self.informers[Cache.ORDERS].list():
                self.queue.add(wiring.order_key(o))

    def _publisher(self) -> None:
        """One thread publishes the gauges that list every order, every ``PUBLISH_SECONDS`` (each
        worker doing it was 8% of the controller's CPU at 2,000 orders, docs/benchmarks.md)."""
        while not self.stop_event.wait(PUBLISH_SECONDS):
            self._publish()

    def _publish(self) -> None:
        counts: dict[str, int] = {}
        for o in self.informers[Cache.ORDERS].list():
            phase = (o.get("status") or {}).get("phase") or "Pending"
            counts[phase] = counts.get(phase, 0) + 1
        for phase in ("Pending", "Ready", "Degraded", "Failed"):
            self.metrics.orders_by_phase.labels(phase=phase).set(counts.get(phase, 0))
        self.metrics.devices.set(self.ledger.device_count())
        self.metrics.over_committed.set(len(self.ledger.over_committed()))

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

    def stop(self) -> None:
        self.stop_event.set()
        self.queue.shutdown()
        for inf in self.informers.values():
            inf.stop()
        self.probes.close()
        self.prober.close()
        self.progress.close()
        self.events.flush(timeout=5)
        self.events.close()
