"""200 malformed or truncated requests: the activator keeps answering and holds nothing afterwards."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path

from tests.unit.activator.support import ORDER, TOKEN, Running, running, until, upstream

GOOD = (
    b"POST /v1/chat/completions HTTP/1.1\r\nhost: chat.team.svc\r\n"
    + f"authorization: Bearer {TOKEN}\r\n".encode()
    + b'content-type: application/json\r\ncontent-length: 17\r\n\r\n{"model": "m"}\r\n'
)
SHAPES = [
    GOOD,
    b"GET / HTTP/1.1\r\n\r\n",
    b"BREW /pot HTCPCP/1.0\r\n\r\n",
    b"POST /v1 HTTP/1.1\r\nhost: a\r\ncontent-length: -1\r\n\r\n",
    b"POST /v1 HTTP/1.1\r\nhost: a\r\ncontent-length: 1, 2\r\n\r\nx",
    b"POST /v1 HTTP/1.1\r\nhost: a\r\ntransfer-encoding: chunked\r\n\r\nzz\r\nxx\r\n",
    b"POST /v1 HTTP/1.1\r\nno colon here\r\n\r\n",
    b"POST /v1 HTTP/1.1\r\nhost: a\r\nx: \x00\x01\r\n\r\n",
    b"\r\n\r\n\r\n",
    b"POST /v1 HTTP/1.1\r\nhost: a\r\n"
    + f"authorization: Bearer {TOKEN}\r\n".encode()
    + b"content-length: 999999999\r\n\r\n",
    b"POST /v1 HTTP/1.1\r\nhost: a\r\n"
    + f"authorization: Bearer {TOKEN}\r\n".encode()
    + b"content-length: 40\r\n\r\n{",
    b"POST " + b"/a" * 5000 + b" HTTP/1.1\r\n\r\n",
]


def _cases(n: int, seed: int = 23) -> list[tuple[bytes, bool]]:
    """(bytes to send, whether to close right after sending)."""
    rng = random.Random(seed)
    cases = []
    for _ in range(n):
        shape = rng.choice(SHAPES)
        how = rng.randrange(4)
        if how == 0:
            data = shape[: rng.randrange(len(shape) + 1)]  # truncated
        elif how == 1:
            corrupted = bytearray(shape)
            for _ in range(rng.randrange(1, 6)):
                corrupted[rng.randrange(len(corrupted))] = rng.randrange(256)
            data = bytes(corrupted)
        elif how == 2:
            data = rng.randbytes(rng.randrange(1, 300))
        else:
            data = shape
        cases.append((data, rng.random() < 0.3))
    return cases


async def _poke(run: Running, data: bytes, close_early: bool) -> None:
    try:
        reader, writer = await run.open_tls()
    except OSError:
        return
    try:
        writer.write(data)
        await writer.drain()
        if not close_early:
            async with asyncio.timeout(5):
                while await reader.read(65536):
                    pass
    except OSError:
        pass
    finally:
        writer.close()


def test_malformed_and_truncated_requests_leave_the_activator_answering_and_holding_nothing(
    tmp_path: Path,
) -> None:
    async def scenario() -> None:
        async with running(
            tmp_path,
            header_timeout_seconds=0.3,
            body_timeout_seconds=0.3,
            max_hold_seconds=0.3,
            max_header_bytes=4096,
        ) as run:
            cases = _cases(200)
            for start in range(0, len(cases), 50):
                await asyncio.gather(*(_poke(run, data, early) for data, early in cases[start : start + 50]))
            await until(lambda: run.activator.holds.total == 0, timeout=3)
            assert run.held() == 0
            async with upstream(run.ca) as up, run.client() as client:
                run.orders.set_ready(ORDER, [up.address])
                response = await run.call(client)
                assert response.status_code == 200
            assert run.activator.holds.total == 0

    asyncio.run(scenario())
