"""The orders' certificates, token digests and ready upstreams, kept in memory from API objects.

``activator.kube_reader`` feeds it the Secrets and EndpointSlices it lists and watches (from its
threads); the serving side reads it on the event loop as ``OrderSecrets`` and ``Upstreams``. A lock
keeps the two apart; no call does I/O. What is taken from each object is ``activator.kube_objects``'.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Any

from activator import kube_objects
from activator.hosts import OrderKey
from activator.kube_objects import Obj
from activator.sources import TlsPair

DELETED = "DELETED"


class OrderBook:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._tls: dict[OrderKey, TlsPair] = {}
        self._tokens: dict[OrderKey, bytes] = {}
        self._slices: dict[OrderKey, dict[str, list[str]]] = {}

    # --- read by the serving side ---------------------------------------------------------------
    def tls(self, order: OrderKey) -> TlsPair | None:
        with self._lock:
            return self._tls.get(order)

    def token_digest(self, order: OrderKey) -> bytes | None:
        with self._lock:
            return self._tokens.get(order)

    def ready(self, namespace: str, name: str) -> list[str]:
        with self._lock:
            slices = self._slices.get(OrderKey(namespace, name), {})
            return [address for _, addresses in sorted(slices.items()) for address in addresses]

    # --- written from the API's objects ---------------------------------------------------------
    def reset_secrets(self, items: Iterable[Obj]) -> None:
        """Everything a fresh list says (what it lacks is gone), swapped in at once: a handshake
        meanwhile sees the old state or the new, never an empty book."""
        tls: dict[OrderKey, TlsPair] = {}
        tokens: dict[OrderKey, bytes] = {}
        for item in items:
            _apply_secret(tls, tokens, "ADDED", item)
        with self._lock:
            self._tls, self._tokens = tls, tokens

    def secret_event(self, kind: str, secret: Obj) -> None:
        """A Secret ``ADDED``, ``MODIFIED`` or ``DELETED``; only an order's ``-tls`` and ``-auth`` count."""
        with self._lock:
            _apply_secret(self._tls, self._tokens, kind, secret)

    def reset_slices(self, items: Iterable[Obj]) -> None:
        slices: dict[OrderKey, dict[str, list[str]]] = {}
        for item in items:
            _apply_slice(slices, "ADDED", item)
        with self._lock:
            self._slices = slices

    def slice_event(self, kind: str, endpoint_slice: Obj) -> None:
        with self._lock:
            _apply_slice(self._slices, kind, endpoint_slice)


def _apply_secret(
    tls: dict[OrderKey, TlsPair], tokens: dict[OrderKey, bytes], kind: str, secret: Obj
) -> None:
    found = kube_objects.secret_kind(secret)
    if found is None:
        return
    order, which = found
    if which == "tls":
        _put(tls, order, kube_objects.tls_pair(secret) if kind != DELETED else None)
    else:
        _put(tokens, order, kube_objects.auth_digest(secret) if kind != DELETED else None)


def _apply_slice(book: dict[OrderKey, dict[str, list[str]]], kind: str, endpoint_slice: Obj) -> None:
    order = kube_objects.order_label(endpoint_slice)
    name = kube_objects.object_name(endpoint_slice)
    if order is None or not name:
        return
    addresses = kube_objects.ready_addresses(endpoint_slice) if kind != DELETED else []
    slices = book.setdefault(order, {})
    if addresses:
        slices[name] = addresses
    else:
        slices.pop(name, None)
        if not slices:
            del book[order]


def _put(book: dict[OrderKey, Any], order: OrderKey, value: Any) -> None:
    if value is None:
        book.pop(order, None)
    else:
        book[order] = value
