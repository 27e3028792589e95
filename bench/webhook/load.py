"""A small HTTP/1.1-over-TLS load generator on asyncio protocols (keep-alive, one request in flight
per connection). Closed loop (fixed concurrency, as fast as answered) and open loop (a fixed rate,
latency measured from the scheduled send time, so queueing is counted).
"""

from __future__ import annotations

import asyncio
import ssl
import time
from dataclasses import dataclass


class _Connection(asyncio.Protocol):
    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.waiter: asyncio.Future[int] | None = None
        self.need = -1

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        if self.need < 0:
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                return
            head = bytes(self.buffer[:end]).lower()
            status = int(head[9:12])
            at = head.find(b"content-length:")
            length = int(head[at + 15 : head.find(b"\r\n", at) if head.find(b"\r\n", at) > 0 else None])
            self.need = end + 4 + length
            self.status = status
        if len(self.buffer) >= self.need:
            del self.buffer[: self.need]
            self.need = -1
            if self.waiter is not None and not self.waiter.done():
                self.waiter.set_result(self.status)

    def connection_lost(self, exc: Exception | None) -> None:
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_exception(ConnectionError("connection lost"))

    async def request(self, payload: bytes) -> int:
        assert self.transport is not None
        self.waiter = asyncio.get_running_loop().create_future()
        self.transport.write(payload)
        return await self.waiter


@dataclass(frozen=True)
class Result:
    requests: int
    seconds: float
    latencies: list[float]
    errors: int
    sent: int = 0  # every request answered, warmup included
    server_cpu: float = 0.0  # CPU seconds the server process spent over the whole slice

    @property
    def rate(self) -> float:
        return self.requests / self.seconds

    def percentile(self, p: float) -> float:
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))]


def http_request(path: str, body: bytes) -> bytes:
    head = (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


async def _connect(port: int, context: ssl.SSLContext, n: int) -> list[_Connection]:
    loop = asyncio.get_running_loop()
    out = []
    for _ in range(n):
        _, proto = await loop.create_connection(
            _Connection, "127.0.0.1", port, ssl=context, server_hostname="127.0.0.1"
        )
        out.append(proto)
    return out


def _close(connections: list[_Connection]) -> None:
    for c in connections:
        if c.transport is not None:
            c.transport.close()


async def closed_loop(
    port: int, context: ssl.SSLContext, payload: bytes, *, concurrency: int, seconds: float, warmup: float
) -> Result:
    """``concurrency`` connections, each sending its next request as soon as the last is answered."""
    connections = await _connect(port, context, concurrency)
    latencies: list[float] = []
    errors = 0
    started = time.perf_counter()
    measure_from = started + warmup
    stop = measure_from + seconds

    sent = 0

    async def worker(c: _Connection) -> None:
        nonlocal errors, sent
        while True:
            t0 = time.perf_counter()
            if t0 >= stop:
                return
            status = await c.request(payload)
            t1 = time.perf_counter()
            sent += 1
            if t0 >= measure_from:
                latencies.append(t1 - t0)
                errors += status != 200

    await asyncio.gather(*(worker(c) for c in connections))
    _close(connections)
    return Result(len(latencies), seconds, latencies, errors, sent=sent)


async def open_loop(
    port: int, context: ssl.SSLContext, payload: bytes, *, rate: float, seconds: float, connections: int
) -> Result:
    """``rate`` requests per second spread evenly over ``connections``, each connection on its own fixed
    schedule (as wrk2 does); latency runs from the scheduled send time, so queueing is counted."""
    pool = await _connect(port, context, connections)
    latencies: list[float] = []
    errors = 0
    interval = connections / rate
    per_connection = int(seconds / interval)
    start = time.perf_counter() + 0.05

    async def worker(i: int, c: _Connection) -> None:
        nonlocal errors
        first = start + i * interval / connections
        for k in range(per_connection):
            scheduled = first + k * interval
            delay = scheduled - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            status = await c.request(payload)
            latencies.append(time.perf_counter() - scheduled)
            errors += status != 200

    await asyncio.gather(*(worker(i, c) for i, c in enumerate(pool)))
    _close(pool)
    return Result(len(latencies), seconds, latencies, errors, sent=len(latencies))
