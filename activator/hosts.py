"""Which order a TLS server name names. Pure.

The activator serves the orders' in-cluster endpoints: a client of ``<name>.<namespace>.svc`` (or
``<name>.<namespace>.svc.cluster.local``) sends that name as SNI, and the name is all the activator
knows of the order before the handshake ends. Anything else (an IP address, an external host, no
SNI at all) names no order.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

SUFFIXES = (".svc.cluster.local", ".svc")
_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")


@dataclass(frozen=True, slots=True, order=True)
class OrderKey:
    """An order (InferenceService) by namespace and name."""

    namespace: str
    name: str

    @property
    def host(self) -> str:
        """The order's in-cluster host, the name its certificate carries and upstreams are asked for."""
        return f"{self.name}.{self.namespace}.svc"

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"


def order_of_host(server_name: str | None) -> OrderKey | None:
    """The order a server name ``<name>.<namespace>.svc[.cluster.local]`` names; None for any other
    name (case-insensitive; a trailing dot is allowed, as in a fully qualified name)."""
    if not server_name:
        return None
    host = server_name.lower().removesuffix(".")
    for suffix in SUFFIXES:
        if host.endswith(suffix):
            parts = host[: -len(suffix)].split(".")
            if len(parts) == 2 and all(_LABEL.fullmatch(p) for p in parts):
                return OrderKey(namespace=parts[1], name=parts[0])
            return None
    return None
