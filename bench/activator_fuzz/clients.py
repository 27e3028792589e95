"""The storm's clients: each one connection to the activator, of a kind chosen at random (seeded).

Used by ``python -m bench.activator_fuzz`` against the activator process and by the unit test
(``tests/unit/activator/test_fuzz_concurrent.py``) against an in-process one, with shorter bounds.

Every client returns one outcome string: the answer's status (``"200"``, ``"401"``, ``"503"``...,
``"503-no-retry-after"`` for a 503 without ``Retry-After``), ``"closed"`` (the activator closed the
connection without an answer), ``"left"`` (the client went away first, as it meant to),
``"handshake-refused"``, ``"connect-error"``, or ``"hang"`` when no answer nor close came within
``Target.patience`` (a bug: every wait in the activator is bounded).
"""

from __future__ import annotations

import asyncio
import random
import ssl
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

KINDS = (
    "malformed",
    "slowloris",
    "slow-body",
    "big-head",
    "big-body",
    "held",
    "leaver",
    "wrong-token",
    "unknown-sni",
    "drop",
)
"""What a client does; ``held`` sends a valid request and waits for its answer (503 with
``Retry-After`` when its order does not wake in time or too many are held, 200 once it is ready)."""


@dataclass(frozen=True, slots=True)
class Target:
    """The activator's HTTPS listener, its orders and the bounds it was started with."""

    port: int
    ca: ssl.SSLContext
    orders: tuple[str, ...]
    """The orders' hosts (``<name>.<namespace>.svc``), all with ``token``."""
    token: str
    header_timeout: float
    body_timeout: float
    max_hold: float
    max_header_bytes: int
    max_body_bytes: int
    trickle: float = 1.0
    """Seconds between two bytes of a slow client."""
    address: str = "127.0.0.1"

    @property
    def patience(self) -> float:
        """How long a client waits for an answer or a close before it calls it a hang."""
        return self.header_timeout * 2 + self.body_timeout + self.max_hold + 10


@dataclass
class Tally:
    """Outcomes by kind, and answer timings."""

    outcomes: Counter[tuple[str, str]] = field(default_factory=Counter)
    answers: int = 0
    """Connections that got an HTTP status line back."""

    def add(self, kind: str, outcome: str) -> None:
        self.outcomes[kind, outcome] += 1
        if outcome[:1].isdigit():
            self.answers += 1

    def by_outcome(self) -> dict[str, int]:
        out: Counter[str] = Counter()
        for (_, outcome), n in self.outcomes.items():
            out[outcome] += n
        return dict(sorted(out.items()))

    def by_kind(self) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {}
        for (kind, outcome), n in sorted(self.outcomes.items()):
            out.setdefault(kind, {})[outcome] = n
        return out

    @property
    def hangs(self) -> int:
        return sum(n for (_, outcome), n in self.outcomes.items() if outcome == "hang")


BODY = b'{"model": "m", "messages": []}'


def request(host: str, *, token: str | None, body: bytes = BODY) -> bytes:
    auth = f"authorization: Bearer {token}\r\n".encode() if token is not None else b""
    return (
        b"POST /v1/chat/completions HTTP/1.1\r\nhost: "
        + host.encode()
        + b"\r\n"
        + auth
        + b"content-type: application/json\r\ncontent-length: %d\r\n\r\n" % len(body)
        + body
    )


def shapes(host: str, token: str) -> list[bytes]:
    """Requests, good and broken, that ``malformed`` truncates, corrupts or sends as they are."""
    auth = f"authorization: Bearer {token}\r\n".encode()
    return [
        request(host, token=token),
        b"GET / HTTP/1.1\r\n\r\n",
        b"BREW /pot HTCPCP/1.0\r\n\r\n",
        b"POST /v1 HTTP/1.1\r\nhost: a\r\ncontent-length: -1\r\n\r\n",
        b"POST /v1 HTTP/1.1\r\nhost: a\r\ncontent-length: 1, 2\r\n\r\nx",
        b"POST /v1 HTTP/1.1\r\nhost: a\r\n" + auth + b"transfer-encoding: chunked\r\n\r\nzz\r\nxx\r\n",
        b"POST /v1 HTTP/1.1\r\nno colon here\r\n\r\n",
        b"POST /v1 HTTP/1.1\r\nhost: a\r\nx: \x00\x01\r\n\r\n",
        b"\r\n\r\n\r\n",
        b"POST /v1 HTTP/1.1\r\nhost: a\r\n" + auth + b"content-length: 999999999\r\n\r\n",
        b"POST /v1 HTTP/1.1\r\nhost: a\r\n" + auth + b"content-length: 40\r\n\r\n{",
        b"POST " + b"/a" * 5000 + b" HTTP/1.1\r\n\r\n",
        b"GET /v1/models HTTP/1.1\r\nhost: a\r\nupgrade: websocket\r\nconnection: upgrade\r\n"
        + auth
        + b"\r\n",
        b"POST /v1 HTTP/1.0\r\n" + auth + b"\r\n",
        b"POST /v1 HTTP/1.1\r\nhost: a\r\n" + auth + b"expect: 100-continue\r\ncontent-length: 5\r\n\r\n",
    ]


def mangled(rng: random.Random, shape: bytes) -> bytes:
    how = rng.randrange(4)
    if how == 0:
        return shape[: rng.randrange(len(shape) + 1)]
    if how == 1:
        corrupted = bytearray(shape)
        for _ in range(rng.randrange(1, 6)):
            corrupted[rng.randrange(len(corrupted))] = rng.randrange(256)
        return bytes(corrupted)
    if how == 2:
        return rng.randbytes(rng.randrange(1, 300))
    return shape


def status_of(answer: bytes) -> str:
    """``"200"`` for ``HTTP/1.1 200 OK...``; a 503 without ``Retry-After`` is told apart; ``"closed"``
    for no answer; the 100 of an ``Expect`` is skipped."""
    while answer.startswith(b"HTTP/1.1 100 "):
        answer = answer.partition(b"\r\n\r\n")[2]
    if not answer:
        return "closed"
    line, _, rest = answer.partition(b"\r\n")
    parts = line.split(b" ")
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/") or not parts[1].isdigit():
        return "garbled"
    status = parts[1].decode()
    head = rest.partition(b"\r\n\r\n")[0].lower()
    if status == "503" and b"retry-after:" not in head:
        return "503-no-retry-after"
    return status


Streams = tuple[asyncio.StreamReader, asyncio.StreamWriter]


async def _open(t: Target, server_name: str) -> Streams:
    return await asyncio.open_connection(
        t.address, t.port, ssl=t.ca, server_hostname=server_name, ssl_handshake_timeout=t.patience
    )


async def _answer(t: Target, reader: asyncio.StreamReader) -> str:
    """Everything up to the close, as an outcome."""
    data = b""
    try:
        async with asyncio.timeout(t.patience):
            while chunk := await reader.read(65536):
                data += chunk
    except TimeoutError:
        return "hang"
    except OSError:
        pass  # a reset after the answer (the activator closed while we were still sending)
    return status_of(data)


async def _send(writer: asyncio.StreamWriter, data: bytes) -> bool:
    """Write; False when the activator already closed or reset the connection."""
    try:
        writer.write(data)
        await writer.drain()
    except OSError:
        return False
    return True


async def _trickle(t: Target, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, data: bytes) -> str:
    """Send ``data`` a byte every ``trickle`` seconds, watching for the activator's answer or close."""
    for i in range(len(data)):
        if not await _send(writer, data[i : i + 1]):
            return await _answer(t, reader)
        try:
            async with asyncio.timeout(t.trickle):
                first = await reader.read(65536)
        except TimeoutError:
            continue
        except OSError:
            return "closed"  # reset: the activator closed while a byte was on its way
        return status_of(first)
    return await _answer(t, reader)


async def one(kind: str, t: Target, rng: random.Random) -> str:
    """One client of ``kind``; its outcome."""
    host = rng.choice(t.orders)
    if kind == "unknown-sni":
        name = rng.choice(
            [
                "nobody.team.svc",
                "chat.elsewhere.svc",
                "example.com",
                "chat.team.svc.evil",
                "a.b.team.svc",
                "1.2.3.4",
            ]
        )
        try:
            _, writer = await _open(t, name)
        except (ssl.SSLError, OSError):
            return "handshake-refused"
        writer.close()
        return "handshake-accepted"
    if kind == "drop" and rng.random() < 0.5:
        try:  # TCP only: closed before (or during) the handshake
            _, writer = await asyncio.open_connection(t.address, t.port)
        except OSError:
            return "connect-error"
        if rng.random() < 0.5:
            writer.write(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03")  # the start of a ClientHello
        writer.close()
        return "left"
    try:
        reader, writer = await _open(t, host)
    except (ssl.SSLError, OSError):
        return "connect-error"
    try:
        return await _speak(kind, t, rng, host, reader, writer)
    finally:
        writer.close()


async def _speak(
    kind: str,
    t: Target,
    rng: random.Random,
    host: str,
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
) -> str:
    if kind == "drop":
        return "left"
    if kind == "malformed":
        data = mangled(rng, rng.choice(shapes(host, t.token)))
        sent = await _send(writer, data)
        if sent and rng.random() < 0.3:
            return "left"
        return await _answer(t, reader)
    if kind == "slowloris":
        return await _trickle(t, reader, writer, request(host, token=t.token))
    if kind == "slow-body":
        body = b'{"model": "m", "messages": [], "pad": "' + b"p" * 64 + b'"}'
        whole = request(host, token=t.token, body=body)
        head, _, body = whole.partition(b"\r\n\r\n")
        if not await _send(writer, head + b"\r\n\r\n" + body[:3]):
            return await _answer(t, reader)
        return await _trickle(t, reader, writer, body[3:])
    if kind == "big-head":
        big = b"x-big: " + b"z" * (t.max_header_bytes + 1000) + b"\r\n"
        data = request(host, token=t.token).replace(b"\r\n", b"\r\n" + big, 1)
        await _send(writer, data)
        return await _answer(t, reader)
    if kind == "big-body":
        if rng.random() < 0.5:  # declared too large: 413 before the body is sent
            data = request(host, token=t.token).replace(
                b"content-length: %d" % len(BODY), b"content-length: %d" % (t.max_body_bytes + 1)
            )
            await _send(writer, data)
            return await _answer(t, reader)
        token = t.token if rng.random() < 0.6 else "wrong"  # a wrong one: 401, the body read and dropped
        head = (
            b"POST /v1/completions HTTP/1.1\r\nhost: " + host.encode() + b"\r\n"
            b"authorization: Bearer " + token.encode() + b"\r\ntransfer-encoding: chunked\r\n\r\n"
        )
        chunk = b"x" * 65536
        if await _send(writer, head):
            for _ in range(t.max_body_bytes // len(chunk) + 2):
                if not await _send(writer, b"%x\r\n%s\r\n" % (len(chunk), chunk)):
                    break
            else:
                await _send(writer, b"0\r\n\r\n")
        return await _answer(t, reader)
    if kind == "wrong-token":
        presented = rng.choice([None, "wrong", t.token + "x", t.token.upper(), ""])
        data = request(host, token=presented)
        if rng.random() < 0.3:
            data = data.replace(b"Bearer ", b"Basic ")
        await _send(writer, data)
        return await _answer(t, reader)
    if kind == "held":
        await _send(writer, request(host, token=t.token))
        return await _answer(t, reader)
    if kind == "leaver":
        await _send(writer, request(host, token=t.token))
        try:
            async with asyncio.timeout(rng.uniform(0.05, t.max_hold * 0.8)):
                first = await reader.read(65536)  # an answer before it leaves (the order woke)
                return status_of(first)
        except TimeoutError:
            return "left"
        except OSError:
            return "closed"
    raise ValueError(f"unknown kind {kind!r}")


async def storm(
    t: Target,
    *,
    clients: int,
    seconds: float,
    seed: int,
    kinds: tuple[str, ...] = KINDS,
    at_half: Callable[[], Awaitable[None]] | None = None,
    tally: Tally | None = None,
) -> Tally:
    """``clients`` loops, each opening one connection after another (kind at random) until
    ``seconds`` have passed; the last ones finish (each bounded by ``Target.patience``).
    ``at_half`` is awaited once, half way."""
    tally = tally if tally is not None else Tally()
    deadline = time.monotonic() + seconds

    async def loop(i: int) -> None:
        rng = random.Random(seed * 100_003 + i)
        await asyncio.sleep(rng.uniform(0, min(1.0, seconds / 4)))  # no thundering start
        while time.monotonic() < deadline:
            kind = rng.choice(kinds)
            tally.add(kind, await one(kind, t, rng))

    async def half() -> None:
        await asyncio.sleep(seconds / 2)
        if at_half is not None:
            await at_half()

    await asyncio.gather(half(), *(loop(i) for i in range(clients)))
    return tally


def tcp_sockets(port: int) -> dict[str, int]:
    """The activator's side of its connections, by TCP state (``/proc/net/tcp``, local port ``port``):
    ``established`` or ``close_wait`` ones once every client has closed are connections it never closed."""
    states = {
        "01": "established",
        "06": "time_wait",
        "08": "close_wait",
        "04": "fin_wait1",
        "05": "fin_wait2",
    }
    out: dict[str, int] = {}
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        cols = line.split()
        if int(cols[1].split(":")[1], 16) == port and cols[3] in states:
            out[states[cols[3]]] = out.get(states[cols[3]], 0) + 1
    return out
