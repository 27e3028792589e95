"""The orders' Secrets and EndpointSlices, read from the API server into an ``OrderBook`` (list, then watch).

Two daemon threads, one per kind, each list every namespace's objects labelled with an order (pages
of 500), then watch from the list's resourceVersion, and list anew when the version expires (410) or
the API fails (with a backoff). The event loop only ever reads the book (``activator.order_book``),
never the network.

A watch that ends (the server closes it after ``WATCH_SECONDS``) is resumed from the last
resourceVersion seen (bookmarks included); a list is swapped into the book at once.

- Secrets: label ``ai.deckhouse.io/inference-service`` (the controller puts it on ``<name>-auth``,
  cert-manager's ``secretTemplate`` on ``<name>-tls``). Only those two names are kept, and of
  ``-auth`` only the token's digest.
- EndpointSlices: the same label and ``endpointslice.kubernetes.io/managed-by:
  endpointslice-controller.k8s.io``, i.e. the slices Kubernetes computes for a Service selecting the
  order's pods (``activator.kube_objects``).

Bounded: at most ``max_objects`` of each kind are kept (beyond, new ones are dropped and logged), and
a Secret's value beyond 64 KiB is ignored. Needs get/list/watch on secrets and
discovery.k8s.io/endpointslices cluster-wide; writes nothing.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any

from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException

from activator import kube_objects
from activator.kube_objects import Obj
from activator.order_book import OrderBook

log = logging.getLogger("activator.kube_reader")

PAGE = 500
WATCH_SECONDS = 300
ListFn = Callable[..., Any]


class KubeReader:
    """Keeps an ``OrderBook`` up to date from the API; ``Readiness`` once both kinds were listed."""

    def __init__(self, api: client.ApiClient, book: OrderBook, *, max_objects: int = 20000) -> None:
        core, discovery = client.CoreV1Api(api), client.DiscoveryV1Api(api)
        self._mirrors = [
            _Mirror(
                "secrets",
                core.list_secret_for_all_namespaces,
                kube_objects.LABEL_ORDER,
                book.reset_secrets,
                book.secret_event,
                max_objects,
            ),
            _Mirror(
                "endpointslices",
                discovery.list_endpoint_slice_for_all_namespaces,
                f"{kube_objects.LABEL_ORDER},{kube_objects.SLICE_MANAGED_BY}={kube_objects.SLICE_CONTROLLER}",
                book.reset_slices,
                book.slice_event,
                max_objects,
            ),
        ]

    def start(self) -> None:
        for mirror in self._mirrors:
            mirror.start()

    def stop(self) -> None:
        for mirror in self._mirrors:
            mirror.stop()

    def synced(self) -> bool:
        return all(m.synced.is_set() for m in self._mirrors)


class _Mirror:
    """List and watch one kind in a daemon thread, handing the objects (JSON dicts) on."""

    def __init__(
        self,
        kind: str,
        list_fn: ListFn,
        selector: str,
        reset: Callable[[list[Obj]], None],
        on_event: Callable[[str, Obj], None],
        max_objects: int,
    ) -> None:
        self.kind = kind
        self.synced = threading.Event()
        self._list = list_fn
        self._selector = selector
        self._reset = reset
        self._on_event = on_event
        self._max = max_objects
        self._count = 0
        self._stop = threading.Event()
        self._watch: watch.Watch | None = None
        self._thread = threading.Thread(target=self._run, name=f"activator-{kind}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._watch is not None:
            self._watch.stop()  # type: ignore[no-untyped-call]

    def _run(self) -> None:
        backoff = 1.0
        version: str | None = None
        while not self._stop.is_set():
            try:
                if version is None:
                    version = self._list_all()
                    self.synced.set()
                version = self._watch_from(version)  # ends after WATCH_SECONDS: watch on from there
                backoff = 1.0
            except ApiException as e:
                version = None  # list anew: 410 (the version is too old) or a refusal
                if e.status != 410:
                    log.warning("%s: %s %s; listing again in %.0f s", self.kind, e.status, e.reason, backoff)
                    self._stop.wait(backoff)
                    backoff = min(backoff * 2, 60.0)
            except Exception as e:  # the API is unreachable, a proxy cut the stream, ...
                version = None
                log.warning("%s: %s; listing again in %.0f s", self.kind, e, backoff)
                self._stop.wait(backoff)
                backoff = min(backoff * 2, 60.0)

    def _list_all(self) -> str:
        items: list[Obj] = []
        token: str | None = None
        while True:
            kwargs: dict[str, Any] = {
                "label_selector": self._selector,
                "limit": PAGE,
                "_preload_content": False,
            }
            if token:
                kwargs["_continue"] = token
            page = json.loads(self._list(**kwargs).data)
            items.extend(page.get("items") or ())
            meta = page.get("metadata") or {}
            token = meta.get("continue")
            if not token:
                break
        if len(items) > self._max:
            log.error("%s: %d objects, keeping only the first %d", self.kind, len(items), self._max)
            items = items[: self._max]
        self._reset(items)
        self._count = len(items)
        log.info("%s: listed %d", self.kind, len(items))
        return str(meta.get("resourceVersion") or "")

    def _watch_from(self, version: str) -> str:
        """Apply the events after ``version`` until the watch ends; the last version seen."""
        self._watch = watch.Watch()  # type: ignore[no-untyped-call]
        for event in self._watch.stream(  # type: ignore[no-untyped-call]
            self._list,
            label_selector=self._selector,
            resource_version=version,
            timeout_seconds=WATCH_SECONDS,
            allow_watch_bookmarks=True,
        ):
            if self._stop.is_set():
                break
            kind, raw = event.get("type"), event.get("raw_object")
            if not isinstance(raw, Mapping):
                continue
            if kind == "ERROR":
                raise ApiException(status=raw.get("code") or 500, reason=str(raw.get("message")))
            version = str((raw.get("metadata") or {}).get("resourceVersion") or version)
            if kind in ("ADDED", "MODIFIED", "DELETED"):
                if kind == "ADDED" and self._count >= self._max:
                    log.error("%s: more than %d objects, ignoring new ones", self.kind, self._max)
                    continue
                self._count += {"ADDED": 1, "DELETED": -1}.get(kind, 0)
                self._on_event(kind, raw)
        return version
