"""One connection to the activator's HTTPS listener, from the handshake's order to the answer.

The steps, each with its bound:

1. The order is the one the handshake's SNI named (``activator.certificates``).
2. The request line and headers within ``header_timeout_seconds`` and ``max_header_bytes`` (431).
3. The token: ``Authorization: Bearer`` must match the digest of the order's ``<name>-auth``;
   without that Secret the order is not served (fail closed). Either refusal is a 401 that holds
   nothing and wakes nothing: it is answered before the body is read and before any count. A
   request that already went through an activator (its ``Via``, ``activator.forward``) has looped
   back: it is closed unanswered, never held, and the activator that sent it tries again later.
4. The body within ``body_timeout_seconds`` and ``max_body_bytes`` (413), and within what is left of
   ``max_body_bytes_total`` for every body kept at once (503 with ``Retry-After`` before it is read).
5. The hold (``activator.holds``): 503 with ``Retry-After`` when it is full or runs out. While
   held, the client is watched: if it closes, the hold is released at once.
6. The forward (``activator.forward``): the upstream's status, headers and body, streamed back
   chunk by chunk as they arrive. Streaming requests (``"stream": true``) are treated like any
   other: the client sees nothing at all (not even headers) while the request is held, then the
   upstream's own response, e.g. its server-sent events, as the upstream sends them.
   A forward that fails before any answer byte (no upstream took the connection, a handshake cut,
   the upstream closed without answering: ``ForwardFailedError``) goes back to step 5 for what
   remains of the same bound: a replica reported ready before its server listens, or endpoints
   that lag behind, are waited for instead of answered 502. The client has seen nothing yet, and
   an inference request has no effect beyond its answer, so sending it again is safe. A failure
   once the answer has begun is not retried: the client sees the connection cut.

A slow or malformed client is closed (or answered 400/408/413/431) without ever being counted as
held. Every connection carries one request and is closed after the answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass

import h11
import httpx

from activator import messages
from activator.certificates import order_of_connection
from activator.forward import Forwarder, ForwardFailedError
from activator.holds import HoldRefusedError, Holds, HoldTimedOutError
from activator.hosts import OrderKey
from activator.http_io import (
    RequestHead,
    RequestTooLargeError,
    close,
    new_connection,
    read_body,
    read_head,
    send_answer,
)
from activator.metrics import ActivatorMetrics
from activator.settings import Settings
from activator.sources import OrderSecrets
from activator.tokens import bearer_matches

log = logging.getLogger("activator.proxy")


class ClientGoneError(Exception):
    """The client closed its connection while its request was held."""


@dataclass(slots=True)
class Proxy:
    settings: Settings
    secrets: OrderSecrets
    holds: Holds
    forwarder: Forwarder
    metrics: ActivatorMetrics

    connections: int = 0
    body_bytes: int = 0  # reserved for the bodies read, held or forwarded now (``max_body_bytes_total``)

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """The ``asyncio.start_server`` callback. Beyond ``max_connections`` open at once, a new
        connection is closed right after its handshake (its client retries)."""
        self.connections += 1
        try:
            order = order_of_connection(writer.get_extra_info("ssl_object"))
            if self.connections > self.settings.max_connections:
                self.metrics.refused("too_many_held")
            elif order is not None:
                await self._serve(order, reader, writer)
        except (OSError, asyncio.IncompleteReadError):
            pass  # the client went away; nothing is held past this point
        except Exception:
            log.exception("connection failed")
        finally:
            self.connections -= 1
            await close(writer)

    async def _serve(
        self, order: OrderKey, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        s = self.settings
        conn = new_connection(max_head=s.max_header_bytes)
        try:
            head = await read_head(conn, reader, timeout=s.header_timeout_seconds, limit=s.max_header_bytes)
        except TimeoutError:
            return  # a slow client is closed without an answer
        except h11.RemoteProtocolError as e:
            self.metrics.refused("bad_request")
            status = 431 if e.error_status_hint == 431 else 400
            await send_answer(conn, writer, messages.error(status, "The request is malformed or too large."))
            return
        if head is None:
            return
        answer = self._refusal(order, head)
        if answer is not None:
            await send_answer(conn, writer, answer)
            await _discard_body(
                conn, reader, limit=s.max_body_bytes, timeout=min(s.body_timeout_seconds, 2.0)
            )
            return
        if messages.looped(head.headers):
            self.metrics.refused("loop")  # closed unanswered: the activator that forwarded it retries
            return
        declared = _declared_length(head)
        # What this request's body may take while it is read, held and forwarded: its declared
        # length, or the most a body may be when it is chunked (its length is not known yet).
        reserve = (
            declared if messages.header(head.headers, b"content-length") is not None else s.max_body_bytes
        )
        if declared <= s.max_body_bytes and self.body_bytes + reserve > s.max_body_bytes_total:
            self.metrics.refused("too_many_held")
            await send_answer(conn, writer, self._busy("Too many request bodies are waiting; try again."))
            return
        self.body_bytes += reserve
        try:
            await self._serve_body(order, conn, head, reader, writer)
        finally:
            self.body_bytes -= reserve

    async def _serve_body(
        self,
        order: OrderKey,
        conn: h11.Connection,
        head: RequestHead,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> None:
        """Steps 4 to 6 of the module docstring, for a request whose body is within the budget."""
        s = self.settings
        try:
            if _declared_length(head) > s.max_body_bytes:
                raise RequestTooLargeError
            if conn.they_are_waiting_for_100_continue:
                writer.write(conn.send(h11.InformationalResponse(status_code=100, headers=[])) or b"")
            body = await read_body(conn, reader, limit=s.max_body_bytes, timeout=s.body_timeout_seconds)
        except RequestTooLargeError:
            self.metrics.refused("bad_request")
            await send_answer(
                conn, writer, messages.error(413, f"The body must not exceed {s.max_body_bytes} bytes.")
            )
            return
        except TimeoutError:
            self.metrics.refused("bad_request")
            await send_answer(conn, writer, messages.error(408, "The body did not arrive in time."))
            return
        except h11.RemoteProtocolError:
            self.metrics.refused("bad_request")
            await send_answer(conn, writer, messages.error(400, "The request body is malformed."))
            return
        since, again = self.holds.now(), False
        while True:
            try:
                ready = await self._hold(order, reader, since=since, again=again)
            except HoldRefusedError:
                await send_answer(
                    conn, writer, self._busy(f"Too many requests are waiting for {order.host} to start.")
                )
                return
            except HoldTimedOutError:
                await send_answer(conn, writer, self._busy(f"{order.host} did not become ready in time."))
                return
            except ClientGoneError:
                return
            if await self._forward(conn, writer, order, ready, head, body, since=since):
                return
            again = True  # nothing was answered yet: hold again for what is left of the bound

    def _refusal(self, order: OrderKey, head: RequestHead) -> messages.Answer | None:
        """401 unless the request carries the order's token; the order must have a token at all."""
        digest = self.secrets.token_digest(order)
        if digest is None:
            self.metrics.refused("unknown_order")
            return messages.unauthorized()
        authorization = messages.header(head.headers, b"authorization")
        if not bearer_matches(authorization.decode("latin-1") if authorization else None, digest):
            self.metrics.refused("unauthorized")
            return messages.unauthorized()
        return None

    def _busy(self, message: str) -> messages.Answer:
        return messages.error(503, message, retry_after=self.settings.retry_after_seconds)

    async def _hold(
        self, order: OrderKey, reader: asyncio.StreamReader, *, since: float, again: bool
    ) -> list[str]:
        """``holds.wait``, abandoned (and released) when the client closes meanwhile."""
        waiting = asyncio.create_task(self.holds.wait(order, since=since, again=again))
        watching = asyncio.create_task(_closed(reader))
        try:
            await asyncio.wait((waiting, watching), return_when=asyncio.FIRST_COMPLETED)
        finally:
            watching.cancel()
            if not waiting.done():
                waiting.cancel()
            with contextlib.suppress(asyncio.CancelledError, OSError):  # a reset: the client is gone
                await watching
        if not waiting.done() or waiting.cancelled():
            with contextlib.suppress(asyncio.CancelledError):
                await waiting
            raise ClientGoneError
        return waiting.result()

    async def _forward(
        self,
        conn: h11.Connection,
        writer: asyncio.StreamWriter,
        order: OrderKey,
        ready: list[str],
        head: RequestHead,
        body: bytes,
        *,
        since: float,
    ) -> bool:
        """Forward and stream the answer back: True once done (answered, or cut mid-answer), False
        when it failed before any answer byte (the client has been sent nothing)."""
        try:
            async with self.forwarder.open(order, ready, head, body) as response:
                self.holds.forwarded(since)
                headers = [
                    *messages.forwardable(response.headers.raw),
                    (b"connection", b"close"),
                ]
                writer.write(
                    conn.send(
                        h11.Response(
                            status_code=response.status_code, headers=headers, reason=response.reason_phrase
                        )
                    )
                    or b""
                )
                async for chunk in response.aiter_raw():
                    if chunk:
                        writer.write(conn.send(h11.Data(data=chunk)) or b"")
                        await writer.drain()
                writer.write(conn.send(h11.EndOfMessage()) or b"")
                await writer.drain()
        except ForwardFailedError as e:
            log.info("forward of %s failed before an answer, holding it again: %s", order, e)
            self.metrics.forward_failed()
            return False
        except httpx.HTTPError as e:  # mid-answer: the client sees the connection cut
            log.warning("forward of %s broke off: %s", order, e)
            self.metrics.forward_failed()
        return True


def _declared_length(head: RequestHead) -> int:
    """The request's ``Content-Length`` (h11 has checked it is a number), 0 without one."""
    value = messages.header(head.headers, b"content-length")
    return int(value) if value is not None and value.isdigit() else 0


async def _discard_body(
    conn: h11.Connection, reader: asyncio.StreamReader, *, limit: int, timeout: float
) -> None:
    """Read what is left of a refused request's body, so that closing does not reset the connection
    (and lose the answer) while the client is still sending it. It is dropped as it comes: a client
    without the token must not make the activator keep up to ``max_body_bytes`` per connection."""
    with contextlib.suppress(RequestTooLargeError, TimeoutError, h11.RemoteProtocolError):
        await read_body(conn, reader, limit=limit, timeout=timeout, keep=False)


async def _closed(reader: asyncio.StreamReader) -> None:
    """Returns when the client closes its side (bytes it sends meanwhile are ignored)."""
    while await reader.read(4096):
        pass
