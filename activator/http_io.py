"""HTTP/1.1 over an asyncio stream with h11: one request read within bounds, answers written.

Both listeners (the orders' HTTPS one and the plain admin one) read exactly one request per
connection and close it after the answer (``Connection: close``): a client of a woken order then
reconnects through the order's Service, which by then points at the order's own replicas.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass

import h11

from activator.messages import Answer, Headers, response_headers

READ_CHUNK = 64 * 1024


class RequestTooLargeError(Exception):
    """The body exceeds the bound (413)."""


@dataclass(frozen=True, slots=True)
class RequestHead:
    method: bytes
    target: bytes
    headers: Headers
    """Lower-case names, as h11 gives them."""

    @property
    def size(self) -> int:
        """The head's size on the wire, near enough (request line, ``: `` and CRLFs)."""
        return (
            len(self.method) + len(self.target) + 12 + sum(len(k) + len(v) + 4 for k, v in self.headers) + 2
        )


def new_connection(*, max_head: int) -> h11.Connection:
    """A server-side h11 connection that refuses a head still arriving beyond ``max_head`` bytes."""
    return h11.Connection(h11.SERVER, max_incomplete_event_size=max_head)


async def read_head(
    conn: h11.Connection, reader: asyncio.StreamReader, *, timeout: float, limit: int
) -> RequestHead | None:
    """The request line and headers, or None when the client closed first. Raises ``TimeoutError``
    after ``timeout`` and ``h11.RemoteProtocolError`` on a malformed or oversized head (hint 431).

    h11's ``max_incomplete_event_size`` bounds a head still arriving; a head that arrived whole in
    one read is measured here against the same bound."""
    async with asyncio.timeout(timeout):
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                conn.receive_data(await reader.read(READ_CHUNK))
                continue
            if isinstance(event, h11.Request):
                head = RequestHead(bytes(event.method), bytes(event.target), list(event.headers.raw_items()))
                if head.size > limit:
                    raise h11.RemoteProtocolError("the request head is too large", error_status_hint=431)
                return head
            if isinstance(event, h11.ConnectionClosed):
                return None
            raise h11.RemoteProtocolError(f"unexpected {type(event).__name__}", error_status_hint=400)


async def read_body(
    conn: h11.Connection, reader: asyncio.StreamReader, *, limit: int, timeout: float, keep: bool = True
) -> bytes:
    """The whole body. Raises ``RequestTooLargeError`` beyond ``limit``, ``TimeoutError`` after
    ``timeout``, ``h11.RemoteProtocolError`` when it is malformed or cut short. ``keep=False``
    reads and drops it (a refused request's body): b"" back, and no more than one read in memory."""
    parts: list[bytes] = []
    size = 0
    async with asyncio.timeout(timeout):
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                conn.receive_data(await reader.read(READ_CHUNK))
                continue
            if isinstance(event, h11.Data):
                size += len(event.data)
                if size > limit:
                    raise RequestTooLargeError
                if keep:
                    parts.append(bytes(event.data))
                continue
            if isinstance(event, h11.EndOfMessage):
                return b"".join(parts)
            raise h11.RemoteProtocolError("the body was cut short", error_status_hint=400)


async def send_answer(conn: h11.Connection, writer: asyncio.StreamWriter, answer: Answer) -> None:
    """One of the activator's own answers, when a response can still be started."""
    if conn.our_state not in (h11.IDLE, h11.SEND_RESPONSE):
        return
    try:
        head = conn.send(
            h11.Response(status_code=answer.status, headers=response_headers(answer), reason=answer.reason)
        )
        data = (
            (head or b"")
            + (conn.send(h11.Data(data=answer.body)) or b"")
            + (conn.send(h11.EndOfMessage()) or b"")
        )
    except h11.LocalProtocolError:
        return
    writer.write(data)
    await writer.drain()


async def close(writer: asyncio.StreamWriter) -> None:
    """Close the connection; a peer that is already gone is no error."""
    writer.close()
    with contextlib.suppress(OSError, TimeoutError):
        await asyncio.wait_for(writer.wait_closed(), 5)
