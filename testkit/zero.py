"""Scale to zero seen from outside, for the e2e test and ``python -m bench.zero``: whether an order
runs no pod and holds no device, the devices it holds now, and one request timed to its first byte.
Everything is read from the real API server and answered through the plane's entry address."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

import httpx

from shared import names
from testkit.load import Target
from testkit.platform import Platform


def allocated_devices(p: Platform, namespace: str, order: str) -> int:
    """Devices the order's ResourceClaims hold now (allocated claims labelled with the order)."""
    out = p.kubectl(
        "get", "resourceclaims", "-n", namespace, "-l", f"{names.LABEL_ORDER}={order}", "-o", "json",
    ).stdout  # fmt: skip
    held = 0
    for claim in json.loads(out).get("items") or []:
        allocation = (claim.get("status") or {}).get("allocation") or {}
        held += len((allocation.get("devices") or {}).get("results") or [])
    return held


def pods_of(p: Platform, namespace: str, order: str) -> int:
    out = p.kubectl("get", "pods", "-n", namespace, "-l", f"{names.LABEL_ORDER}={order}", "-o", "name").stdout
    return len(out.split())


def at_zero(p: Platform, namespace: str, order: str) -> bool:
    """The Deployment wants 0 replicas, no pod of the order exists, it holds no device, its Service
    points at the activator (the EndpointSlice ``<order>-activator``), and no real vLLM serves it any
    more: the plane runner takes a deleted pod out of the entry's routes within its sync period
    (about a second), and a request sent before that is answered by the stopping vLLM, as a
    terminating pod may still answer a connection a lagging kube-proxy sends it."""
    d = p.get("deployment", order, namespace) or {}
    return (
        d.get("spec", {}).get("replicas") == 0
        and p.served_by(namespace, order) == 0
        and pods_of(p, namespace, order) == 0
        and allocated_devices(p, namespace, order) == 0
        and p.get("endpointslice", names.activator_slice(order), namespace) is not None
    )


@dataclass(frozen=True)
class Answer:
    status: int | str  # the HTTP status, or "error" for a connection that failed
    first_byte_s: float  # from sending to the first byte of the body (the whole answer for errors)
    total_s: float
    body: str


def timed_request(target: Target, body: dict[str, Any], *, timeout: float = 600.0) -> Answer:
    """One request through the entry address, streamed, timed to its first body byte."""
    began = time.monotonic()
    first: float | None = None
    chunks: list[bytes] = []
    try:
        with target.client(timeout=timeout) as c, c.stream("POST", "/v1/chat/completions", json=body) as r:
            for chunk in r.iter_raw():
                if chunk and first is None:
                    first = time.monotonic() - began
                chunks.append(chunk)
            status: int | str = r.status_code
    except httpx.HTTPError as e:
        status, chunks = "error", [str(e).encode()]
    total = time.monotonic() - began
    return Answer(status, total if first is None else first, total, b"".join(chunks).decode(errors="replace"))
