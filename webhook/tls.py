"""The serving certificate, reloaded from its files when they change, without a restart.

cert-manager rotates the Secret and the kubelet swaps the mounted files. ``ReloadingCertificate``
gives uvicorn one server ``ssl.SSLContext`` (TLS 1.2 or newer) whose SNI callback, on each new
handshake, checks the files' modification times at most every ``check_every`` seconds and, when they
changed, builds a fresh context from them and hands the handshake to it. A half-written pair (cert
and key not matching yet) is logged and the previous certificate kept until the next check.
"""

from __future__ import annotations

import logging
import os
import ssl
import threading
import time
from collections.abc import Callable
from pathlib import Path

log = logging.getLogger("webhook.tls")

Stamp = tuple[tuple[int, int, int], tuple[int, int, int]]


class ReloadingCertificate:
    """A cert/key file pair served over TLS 1.2+, reloaded when the files change."""

    def __init__(
        self,
        *,
        cert_file: str | os.PathLike[str],
        key_file: str | os.PathLike[str],
        check_every: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._cert_file = Path(cert_file)
        self._key_file = Path(key_file)
        self._check_every = check_every
        self._clock = clock
        self._lock = threading.Lock()
        self._stamp = self._read_stamp()
        self._current = self._load()  # fails loudly at start: no certificate, no webhook
        self._checked = clock()
        self.reloads = 0
        self.handshakes = 0
        self._server = _new_context()
        self._server.load_cert_chain(self._cert_file, self._key_file)
        self._server.sni_callback = self._on_client_hello

    @property
    def context(self) -> ssl.SSLContext:
        """The context to serve with (uvicorn's ``config.ssl``)."""
        return self._server

    @property
    def current(self) -> ssl.SSLContext:
        """The context new handshakes are handed to (the last certificate loaded)."""
        return self._current

    def maybe_reload(self) -> bool:
        """Reload when the files changed since the last load; True when a new certificate is in use."""
        with self._lock:
            self._checked = self._clock()
            try:
                stamp = self._read_stamp()
            except OSError as e:
                log.warning("serving certificate files unreadable, keeping the current one: %s", e)
                return False
            if stamp == self._stamp:
                return False
            try:
                context = self._load()
            except (OSError, ssl.SSLError, ValueError) as e:
                log.warning("serving certificate not reloaded (will retry), keeping the current one: %s", e)
                return False
            self._current, self._stamp = context, stamp
            self.reloads += 1
            log.info("serving certificate reloaded from %s", self._cert_file)
            return True

    def _on_client_hello(self, connection: ssl.SSLObject, server_name: str | None, _: ssl.SSLContext) -> None:
        self.handshakes += 1
        try:
            if self._clock() - self._checked >= self._check_every:
                self.maybe_reload()
            connection.context = self._current
        except Exception:  # a failed check must not fail the handshake: the current certificate serves
            log.exception("serving certificate check failed")

    def _read_stamp(self) -> Stamp:
        c, k = os.stat(self._cert_file), os.stat(self._key_file)
        return (c.st_mtime_ns, c.st_size, c.st_ino), (k.st_mtime_ns, k.st_size, k.st_ino)

    def _load(self) -> ssl.SSLContext:
        context = _new_context()
        context.load_cert_chain(self._cert_file, self._key_file)
        return context


def _new_context() -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.options |= ssl.OP_NO_COMPRESSION
    return context
