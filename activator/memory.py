"""In-memory ``OrderSecrets`` and ``Upstreams``, set by hand: for the unit tests and local trials."""

from __future__ import annotations

from activator.hosts import OrderKey
from activator.sources import TlsPair
from activator.tokens import token_digest


class MemoryOrders:
    """Orders' certificates, tokens and ready addresses kept in dicts."""

    def __init__(self) -> None:
        self._tls: dict[OrderKey, TlsPair] = {}
        self._tokens: dict[OrderKey, bytes] = {}
        self._ready: dict[OrderKey, list[str]] = {}
        self._versions = 0

    def set_tls(self, order: OrderKey, cert_pem: bytes, key_pem: bytes) -> None:
        self._versions += 1
        self._tls[order] = TlsPair(cert_pem, key_pem, str(self._versions))

    def set_token(self, order: OrderKey, token: str | None) -> None:
        if token is None:
            self._tokens.pop(order, None)
        else:
            self._tokens[order] = token_digest(token)

    def set_ready(self, order: OrderKey, addresses: list[str]) -> None:
        self._ready[order] = list(addresses)

    def tls(self, order: OrderKey) -> TlsPair | None:
        return self._tls.get(order)

    def token_digest(self, order: OrderKey) -> bytes | None:
        return self._tokens.get(order)

    def ready(self, namespace: str, name: str) -> list[str]:
        return list(self._ready.get(OrderKey(namespace, name), ()))

    def synced(self) -> bool:
        return True
