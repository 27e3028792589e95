"""What the activator reads about an order, as Protocols: its certificate, its token digest and its
ready upstreams. The Kubernetes side answers them (``activator.kube_reader``); the tests answer them
from memory (``activator.memory``). Calls are made on the event loop, so an implementation answers
from memory and never blocks on the network.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from activator.hosts import OrderKey


@dataclass(frozen=True, slots=True)
class TlsPair:
    """The order's serving certificate (PEM chain, leaf first) and key, as in its ``<name>-tls``
    Secret; ``version`` changes whenever the pair may have (the Secret's resourceVersion)."""

    cert_pem: bytes
    key_pem: bytes
    version: str


class OrderSecrets(Protocol):
    def tls(self, order: OrderKey) -> TlsPair | None:
        """The pair of ``<name>-tls`` (type ``kubernetes.io/tls``); None while there is none."""
        ...

    def token_digest(self, order: OrderKey) -> bytes | None:
        """The SHA-256 digest of ``<name>-auth``'s ``token``; None while there is none."""
        ...


class Upstreams(Protocol):
    def ready(self, namespace: str, name: str) -> list[str]:
        """The ``HOST:PORT`` addresses of the order's ready replicas (empty while there is none)."""
        ...


class Readiness(Protocol):
    def synced(self) -> bool:
        """Whether the sources have been read once (the activator is ready to serve)."""
        ...
