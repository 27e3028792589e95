"""Forwarding a request to one of the order's upstreams over HTTPS, and its answer back as it comes.

The upstream is addressed by IP (an EndpointSlice's, or the configured override) and verified as
the order: the TLS server name and the ``Host`` header are ``<name>.<namespace>.svc``, and the
certificate must chain to the platform CA. Connections are not pooled: the pool of httpx keys
connections by address only, and with the override one address answers for every order by SNI,
so a pooled connection could carry one order's request to another. The activator is on the path
only while an order wakes, so a handshake per forward costs little. Each forward carries
``Via: 1.1 inference-activator``: should the address send it back to an activator (a Service still
listing the activator while the replica is already listed ready), that activator closes it unanswered
instead of holding it again (``activator.proxy``), and this one retries.

An upstream that refuses the connection is skipped for the next ready address (nothing was sent).
Any failure before the answer's first byte (no address took the connection, a handshake cut or not
verified, the upstream closed without answering) raises ``ForwardFailedError``: the proxy then holds
the request again and tries later, within its hold bound (``activator.proxy``).
"""

from __future__ import annotations

import random
import ssl
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx

from activator.hosts import OrderKey
from activator.http_io import RequestHead
from activator.messages import VIA, forwardable


class ForwardFailedError(Exception):
    """No upstream could be reached."""


def upstream_tls_context(ca_file: str) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=ca_file)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    return context


_FRAMING = frozenset({"host", "content-length", "transfer-encoding"})


def _only_the_clients_headers(request: httpx.Request, sent: list[tuple[bytes, bytes]]) -> None:
    """Drop what httpx adds on its own (``accept``, ``accept-encoding``, ``user-agent``,
    ``connection``): an ``accept-encoding: gzip`` the client never sent would get it a compressed
    answer it may not read. The framing headers httpx computes from the body stay."""
    names = {k.decode("latin-1").lower() for k, _ in sent} | _FRAMING
    for name in {k.lower() for k in request.headers}:
        if name not in names:
            del request.headers[name]


class Forwarder:
    def __init__(
        self,
        *,
        tls: ssl.SSLContext,
        address_override: str | None = None,
        connect_timeout: float = 10.0,
        read_timeout: float = 600.0,
    ) -> None:
        self._override = address_override
        self._client = httpx.AsyncClient(
            verify=tls,
            trust_env=False,
            follow_redirects=False,
            limits=httpx.Limits(max_keepalive_connections=0, max_connections=None),
            timeout=httpx.Timeout(connect=connect_timeout, read=read_timeout, write=read_timeout, pool=None),
        )

    async def aclose(self) -> None:
        await self._client.aclose()

    def addresses(self, ready: list[str]) -> list[str]:
        """The order in which to try addresses: the override alone, or the ready ones shuffled."""
        if self._override:
            return [self._override]
        return random.sample(ready, len(ready))

    @asynccontextmanager
    async def open(
        self, order: OrderKey, ready: list[str], head: RequestHead, body: bytes
    ) -> AsyncIterator[httpx.Response]:
        """The upstream's response, its body not read yet (``aiter_raw`` streams it)."""
        headers = [
            (b"host", order.host.encode()),
            *forwardable(head.headers, drop=(b"host", b"content-length", b"expect")),
            (b"via", VIA),
        ]
        last: Exception | None = None
        for address in self.addresses(ready):
            url = httpx.URL(f"https://{address}").copy_with(raw_path=head.target)
            request = self._client.build_request(
                head.method.decode("ascii"),
                url,
                headers=headers,
                content=body,
                extensions={"sni_hostname": order.host},
            )
            _only_the_clients_headers(request, headers)
            try:
                response = await self._client.send(request, stream=True)
            except (httpx.ConnectError, httpx.ConnectTimeout) as e:
                last = e
                continue
            except httpx.HTTPError as e:
                raise ForwardFailedError(f"{address}: {e}") from e
            try:
                yield response
            finally:
                await response.aclose()
            return
        raise ForwardFailedError(f"no upstream of {order} could be reached: {last}")
