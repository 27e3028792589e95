"""One TLS listener for many orders: the SNI names the order, and the order's own certificate answers.

``OrderCertificates.server_context()`` is the listener's context. It holds no certificate of its own:
its SNI callback parses the server name (``activator.hosts``), asks ``OrderSecrets.tls`` for the
order's ``<name>-tls`` pair and hands the handshake to that order's context. A context is built once
per pair and kept while the Secret's resourceVersion stays the same, so a renewal by cert-manager
serves the next handshake with the new certificate. No order, no pair, or a pair that does not load:
the handshake is refused (``unrecognized_name``); there is no default certificate.

After the handshake the connection's ``ssl_object.context`` is the order's ``OrderContext``, which
says whose connection it is (``order_of_connection``). The callback runs on the event loop and only
reads memory (and, on a new pair, writes two temporary files: ``ssl`` loads keys only from files).
"""

from __future__ import annotations

import contextlib
import logging
import os
import ssl
import tempfile
from collections.abc import Callable

from activator.hosts import OrderKey, order_of_host
from activator.sources import OrderSecrets, TlsPair

log = logging.getLogger("activator.certificates")

MAX_CONTEXTS = 4096  # orders with a context kept; beyond, the oldest is dropped (and rebuilt when asked)


class OrderContext(ssl.SSLContext):
    """A server context presenting one order's certificate, and naming the order."""

    order: OrderKey
    version: str


def _tls_server_context() -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.options |= ssl.OP_NO_COMPRESSION
    context.set_alpn_protocols(["http/1.1"])
    return context


class OrderCertificates:
    def __init__(self, secrets: OrderSecrets, *, on_unknown: Callable[[], None] = lambda: None) -> None:
        self._secrets = secrets
        self._on_unknown = on_unknown
        self._contexts: dict[OrderKey, OrderContext] = {}
        self._failed: dict[OrderKey, str] = {}  # the version that did not load, not tried again
        self._dir = tempfile.TemporaryDirectory(prefix="activator-certs-")
        self.handshakes = 0
        self.loads = 0

    def close(self) -> None:
        self._dir.cleanup()

    def server_context(self) -> ssl.SSLContext:
        """The listener's context: no certificate, an SNI callback that picks the order's."""
        context = _tls_server_context()
        context.sni_callback = self._on_client_hello
        return context

    def context_for(self, order: OrderKey) -> OrderContext | None:
        """The order's context for its current pair; None while it has none that loads."""
        pair = self._secrets.tls(order)
        if pair is None:
            return None
        cached = self._contexts.get(order)
        if cached is not None and cached.version == pair.version:
            return cached
        if self._failed.get(order) == pair.version:
            return cached
        context = self._load(order, pair)
        if context is None:
            if len(self._failed) >= MAX_CONTEXTS:
                self._failed.clear()
            self._failed[order] = pair.version
            return cached  # a broken renewal: keep serving the certificate that loaded
        self._failed.pop(order, None)
        self._contexts.pop(order, None)
        if len(self._contexts) >= MAX_CONTEXTS:
            self._contexts.pop(next(iter(self._contexts)))
        self._contexts[order] = context
        return context

    def _on_client_hello(
        self, connection: ssl.SSLObject, server_name: str | None, _: ssl.SSLContext
    ) -> int | None:
        self.handshakes += 1
        order = order_of_host(server_name)
        try:
            context = self.context_for(order) if order is not None else None
        except Exception:  # a bug here must refuse this handshake, not crash the listener
            log.exception("certificate lookup failed for %s", server_name)
            context = None
        if context is None:
            self._on_unknown()
            return ssl.ALERT_DESCRIPTION_UNRECOGNIZED_NAME
        connection.context = context
        return None

    def _load(self, order: OrderKey, pair: TlsPair) -> OrderContext | None:
        context = OrderContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.options |= ssl.OP_NO_COMPRESSION
        context.set_alpn_protocols(["http/1.1"])
        context.order, context.version = order, pair.version
        fd, key_file = tempfile.mkstemp(dir=self._dir.name, suffix=".key")
        cert_file = key_file.removesuffix(".key") + ".crt"
        try:
            with os.fdopen(fd, "wb") as f:  # mkstemp: mode 0600
                f.write(pair.key_pem)
            with open(cert_file, "wb") as f:
                f.write(pair.cert_pem)
            context.load_cert_chain(cert_file, key_file)
        except (OSError, ssl.SSLError, ValueError) as e:
            log.warning("certificate of %s (version %s) does not load: %s", order, pair.version, e)
            return None
        finally:
            for path in (cert_file, key_file):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(path)
        self.loads += 1
        log.info("certificate of %s loaded (version %s)", order, pair.version)
        return context


def order_of_connection(ssl_object: object) -> OrderKey | None:
    """The order a finished handshake was for (its context is the order's)."""
    context = getattr(ssl_object, "context", None)
    return context.order if isinstance(context, OrderContext) else None
