"""HTTP reads from tenant pods, bounded in bytes and in wall-clock time. I/O edge.

The probe (``controller.live.probe``) and the progress scrape (``controller.live.progress_book``) read what a
tenant's pod answers. httpx's timeouts bound each socket operation, not the request: a pod that
sends a byte a second, or an endless fast stream, is never timed out. So:

- **time**: every connection the client opens carries a deadline, ``seconds`` after it was
  opened (``DeadlineBackend``). Each socket operation (connect, TLS handshake, send, receive) gets
  at most the time left, and none starts after it: a request ends by the deadline whatever the
  peer does, headers included. Keep-alive is off, so a connection serves one request.
- **bytes**: ``get`` streams the body raw (``Accept-Encoding: identity``; a compressed answer is
  refused rather than inflated) and stops once it holds more than ``limit`` bytes, so at most
  ``limit`` plus one network chunk is ever held.

Errors are httpx's: a passed deadline is an ``httpx.ReadTimeout`` (or connect/write), a body
beyond the limit is ``BodyTooLarge``, itself an ``httpx.HTTPError``.
"""

from __future__ import annotations

import ssl
import time
import typing
from dataclasses import dataclass

import httpcore
import httpx


class BodyTooLarge(httpx.HTTPError):
    """The answer held more bytes than the reader's limit, or was compressed."""


@dataclass(frozen=True, slots=True)
class Answer:
    status: int
    body: bytes


def _left(deadline: float, timeout: float | None, error: type[Exception]) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise error("the request's deadline passed")
    return left if timeout is None else min(timeout, left)


class _DeadlineStream(httpcore.NetworkStream):
    def __init__(self, inner: httpcore.NetworkStream, deadline: float) -> None:
        self._inner, self._deadline = inner, deadline

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, _left(self._deadline, timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, _left(self._deadline, timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self, ssl_context: ssl.SSLContext, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore.NetworkStream:
        left = _left(self._deadline, timeout, httpcore.ConnectTimeout)
        return _DeadlineStream(self._inner.start_tls(ssl_context, server_hostname, left), self._deadline)

    def get_extra_info(self, info: str) -> typing.Any:
        return self._inner.get_extra_info(info)


class DeadlineBackend(httpcore.NetworkBackend):
    """httpcore's socket backend whose every connection ends ``seconds`` after it was opened."""

    def __init__(self, seconds: float) -> None:
        self._inner = httpcore.SyncBackend()
        self._seconds = seconds

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: typing.Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.NetworkStream:
        deadline = time.monotonic() + self._seconds
        left = _left(deadline, timeout, httpcore.ConnectTimeout)
        return _DeadlineStream(
            self._inner.connect_tcp(host, port, left, local_address, socket_options), deadline
        )

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


class _Transport(httpx.HTTPTransport):
    def __init__(self, verify: ssl.SSLContext | bool, seconds: float) -> None:
        super().__init__(verify=verify, trust_env=False)
        # httpx builds its pool without a way to pass a backend; this is that pool with one
        ctx = verify if isinstance(verify, ssl.SSLContext) else None
        self._pool = httpcore.ConnectionPool(
            ssl_context=ctx, max_keepalive_connections=0, network_backend=DeadlineBackend(seconds)
        )


def client(*, seconds: float, verify: ssl.SSLContext | bool = True) -> httpx.Client:
    """A client whose every request ends within ``seconds`` (see the module doc)."""
    return httpx.Client(transport=_Transport(verify, seconds), timeout=seconds, trust_env=False)


def get(
    c: httpx.Client,
    url: str,
    *,
    limit: int,
    headers: dict[str, str] | None = None,
    extensions: dict[str, typing.Any] | None = None,
) -> Answer:
    """``GET url``: the status and at most ``limit`` bytes of body, else ``BodyTooLarge``."""
    sent = {**(headers or {}), "Accept-Encoding": "identity"}
    with c.stream("GET", url, headers=sent, extensions=extensions) as resp:
        if resp.headers.get("Content-Encoding", "identity").lower() != "identity":
            raise BodyTooLarge(f"the answer is compressed ({resp.headers['Content-Encoding']})")
        declared = resp.headers.get("Content-Length", "")
        if declared.isdigit() and int(declared) > limit:
            raise BodyTooLarge(f"the answer declares {declared} bytes, more than {limit}")
        body = bytearray()
        for chunk in resp.iter_raw():
            body += chunk
            if len(body) > limit:
                raise BodyTooLarge(f"the answer holds more than {limit} bytes")
        return Answer(resp.status_code, bytes(body))
