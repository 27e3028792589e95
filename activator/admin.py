"""The plain-HTTP admin listener: ``/metrics`` (Prometheus text), ``/healthz`` and ``/readyz``.

``/healthz`` answers 200 while the process serves; ``/readyz`` answers 200 once the sources have been
read (``Readiness.synced``), so a new pod gets no traffic before it knows the orders' certificates.
"""

from __future__ import annotations

import asyncio
import contextlib

import h11
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from activator.http_io import close, new_connection, read_head
from activator.sources import Readiness

_MAX_HEAD = 16 * 1024


class Admin:
    def __init__(
        self, *, registry: CollectorRegistry, readiness: Readiness, header_timeout: float = 10.0
    ) -> None:
        self._registry = registry
        self._readiness = readiness
        self._timeout = header_timeout

    def answer(self, method: bytes, target: bytes) -> tuple[int, bytes, bytes]:
        """(status, content type, body) for a request."""
        path = target.split(b"?", 1)[0]
        if method not in (b"GET", b"HEAD"):
            return 405, b"text/plain", b"method not allowed\n"
        if path == b"/metrics":
            return 200, CONTENT_TYPE_LATEST.encode(), generate_latest(self._registry)
        if path == b"/healthz":
            return 200, b"text/plain", b"ok\n"
        if path == b"/readyz":
            if self._readiness.synced():
                return 200, b"text/plain", b"ok\n"
            return 503, b"text/plain", b"sources not read yet\n"
        return 404, b"text/plain", b"not found\n"

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = new_connection(max_head=_MAX_HEAD)
        try:
            with contextlib.suppress(TimeoutError, h11.RemoteProtocolError, OSError):
                head = await read_head(conn, reader, timeout=self._timeout, limit=_MAX_HEAD)
                if head is None:
                    return
                status, content_type, body = self.answer(head.method, head.target)
                headers = [
                    (b"content-type", content_type),
                    (b"content-length", str(len(body)).encode()),
                    (b"connection", b"close"),
                ]
                data = conn.send(h11.Response(status_code=status, headers=headers)) or b""
                if head.method != b"HEAD":
                    data += conn.send(h11.Data(data=body)) or b""
                data += conn.send(h11.EndOfMessage()) or b""
                writer.write(data)
                await writer.drain()
        finally:
            await close(writer)
