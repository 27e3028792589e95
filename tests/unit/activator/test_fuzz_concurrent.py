"""Hundreds of malformed, slow, held and leaving clients at once (``bench.activator_fuzz.clients``, the
bench's own kinds, with short bounds): afterwards the activator still answers, holds nothing, has
no connection open, and keeps no memory the storm allocated (tracemalloc).

No timed assertion: the clients' own bounds only decide which answer each one gets, and every
assertion is about the state once all of them are done.
"""

from __future__ import annotations

import asyncio
import gc
import random
import tracemalloc
from pathlib import Path

from bench.activator_fuzz.clients import KINDS, Tally, Target, one, storm, tcp_sockets
from tests.unit.activator.support import ORDER, OTHER, TOKEN, Running, running, until, upstream

BOUNDS = {
    "header_timeout_seconds": 1.0,
    "body_timeout_seconds": 0.3,
    "max_hold_seconds": 0.5,
    "max_held_per_order": 16,
    "max_held_total": 24,
    "max_connections": 512,
    "max_header_bytes": 4096,
    "max_body_bytes": 64 * 1024,
    "retry_after_seconds": 1,
    "upstream_retry_seconds": 0.05,
}
GROWTH_BOUND = 2 * 1024 * 1024
"""Bytes the storm may leave allocated (tracemalloc, after a warm-up storm that loads what is loaded
once: the orders' TLS contexts, httpx's lazily imported modules). Measured: under 0.2 MiB; a storm
that kept each connection's 64 KiB body, or even its h11 state, would pass it."""


def _target(run: Running, trickle: float = 0.1) -> Target:
    return Target(
        port=run.port,
        ca=run.ca.client_context(),
        orders=(ORDER.host, OTHER.host),
        token=TOKEN,
        header_timeout=float(BOUNDS["header_timeout_seconds"]),
        body_timeout=float(BOUNDS["body_timeout_seconds"]),
        max_hold=float(BOUNDS["max_hold_seconds"]),
        max_header_bytes=int(BOUNDS["max_header_bytes"]),
        max_body_bytes=int(BOUNDS["max_body_bytes"]),
        trickle=trickle,
    )


def _quiet(run: Running) -> bool:
    return run.activator.holds.total == 0 and run.activator.proxy.connections == 0


def _open_sockets(run: Running) -> int:
    """The activator's sockets still open on its port (``/proc/net/tcp``): once every client has
    closed, one lingers only while a handshake or a close is under way (its own bounds)."""
    sockets = tcp_sockets(run.port)
    return sockets.get("established", 0) + sockets.get("close_wait", 0)


def test_a_storm_of_malformed_slow_held_and_leaving_clients_leaves_nothing_behind(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with (
            running(tmp_path, None, **BOUNDS) as run,
            upstream(run.ca, hosts=(ORDER.host, OTHER.host)) as up,
        ):
            target = _target(run)

            async def wake() -> None:
                run.orders.set_ready(ORDER, [up.address])  # OTHER never wakes: its holds run out

            await storm(target, clients=20, seconds=0.5, seed=1, at_half=wake)  # the warm-up
            run.orders.set_ready(ORDER, [])
            await until(lambda: _quiet(run), timeout=10)
            gc.collect()
            tracemalloc.start()
            try:
                baseline = tracemalloc.get_traced_memory()[0]
                tally = Tally()
                await storm(target, clients=250, seconds=1.5, seed=23, at_half=wake, tally=tally)
                await until(lambda: _quiet(run) and _open_sockets(run) == 0, timeout=10)
                gc.collect()
                growth = tracemalloc.get_traced_memory()[0] - baseline
            finally:
                tracemalloc.stop()

            assert run.activator.holds.total == 0
            assert run.held(ORDER) == 0
            assert run.held(OTHER) == 0
            assert run.activator.proxy.connections == 0
            assert _open_sockets(run) == 0  # every client closed: so has the activator
            assert growth < GROWTH_BOUND, f"{growth / 2**20:.2f} MiB kept after the storm"
            assert tally.hangs == 0
            async with run.client() as client:
                assert (await run.call(client)).status_code == 200  # ORDER is ready
                run.orders.set_ready(ORDER, [])
                assert (await run.call(client, token="wrong")).status_code == 401
            assert _quiet(run)

    asyncio.run(scenario())


def test_the_storm_s_outcomes_are_the_ones_each_kind_may_get(tmp_path: Path) -> None:
    """The same kinds, fewer clients: every kind was tried, a wrong token is only ever 401 (never
    held, never forwarded), a valid request is answered 200 or 503 with Retry-After, and nothing hangs."""

    async def scenario() -> None:
        async with (
            running(tmp_path, None, **BOUNDS) as run,
            upstream(run.ca, hosts=(ORDER.host, OTHER.host)) as up,
        ):

            async def wake() -> None:
                run.orders.set_ready(ORDER, [up.address])

            tally = await storm(_target(run), clients=60, seconds=1.5, seed=7, at_half=wake)
            await until(lambda: _quiet(run), timeout=10)
            by_kind = tally.by_kind()
            assert set(by_kind) == set(KINDS)  # each client's first kind is drawn before any wait
            # a handshake may run out on a loaded machine (connect-error); nothing else is allowed
            assert set(by_kind["wrong-token"]) <= {"401", "connect-error"}, by_kind["wrong-token"]
            assert set(by_kind["held"]) <= {"200", "503", "connect-error"}, by_kind["held"]
            assert set(by_kind["unknown-sni"]) == {"handshake-refused"}
            assert "503-no-retry-after" not in tally.by_outcome()
            assert tally.hangs == 0
            assert run.wakeups(ORDER) >= 1

    asyncio.run(scenario())


def test_a_refused_request_s_body_is_read_and_dropped_not_kept(tmp_path: Path) -> None:
    """A client without the token sending a large body: the activator answers 401 and reads the rest
    of the body so the answer is not lost to a reset, but keeps none of it (before the fix it kept
    up to ``max_body_bytes`` per such connection, a memory lever for anyone without a token)."""

    async def scenario() -> None:
        async with running(tmp_path, max_body_bytes=8 * 1024 * 1024, body_timeout_seconds=30) as run:
            target = _target(run)
            size = 6 * 1024 * 1024
            chunk = b"x" * 65536
            head = (
                b"POST /v1/completions HTTP/1.1\r\nhost: chat.team.svc\r\n"
                b"authorization: Bearer wrong\r\ncontent-length: %d\r\n\r\n" % size
            )
            await one("wrong-token", target, random.Random(1))  # warm: the order's TLS context
            gc.collect()
            tracemalloc.start()
            try:
                reader, writer = await run.open_tls()
                writer.write(head)
                for _ in range(size // len(chunk)):
                    writer.write(chunk)
                    await writer.drain()
                async with asyncio.timeout(30):
                    answer = await reader.read()
                writer.close()
                _, peak = tracemalloc.get_traced_memory()
            finally:
                tracemalloc.stop()
            assert answer.startswith(b"HTTP/1.1 401 ")
            assert peak < 2 * 1024 * 1024, f"{peak / 2**20:.1f} MiB at the peak for a refused 6 MiB body"

    asyncio.run(scenario())
