"""TLS passthrough for the orders a real runtime serves: peek at the SNI, connect, splice bytes.

The stand-in's address stays the one entry address. For an order routed to a real runtime
(``RuntimeState.routes``) the stand-in terminates no TLS: it peeks at the ClientHello (without
consuming it), connects to one of the order's backends and copies the raw bytes both ways, so
the client handshakes with the backend and sees the backend's own certificate.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time

from standins.runtime.sni import HEADER, MAX_RECORD, NeedMore, client_hello_sni

PEEK_TIMEOUT = 10.0
CONNECT_TIMEOUT = 5.0
IDLE_TIMEOUT = 300.0
_CHUNK = 65536


def parse_backend(value: object) -> tuple[str, int]:
    """``"HOST:PORT"`` (``"[::1]:PORT"`` for IPv6) -> (host, port); ValueError with the reason."""
    if not isinstance(value, str):
        raise ValueError(f"a backend is a string HOST:PORT, not {value!r}")
    host, _, port = value.rpartition(":")
    host = host.removeprefix("[").removesuffix("]")
    if not host or any(c.isspace() for c in host):
        raise ValueError(f"backend {value!r}: expected HOST:PORT")
    if not port.isdigit() or not 1 <= int(port) <= 65535:
        raise ValueError(f"backend {value!r}: the port must be a number in 1..65535")
    return host, int(port)


def peek_sni(sock: socket.socket, *, timeout: float = PEEK_TIMEOUT) -> str | None:
    """The SNI name of the ClientHello the client is sending, read with ``MSG_PEEK`` so that the
    bytes stay in the socket for whoever reads it next (the TLS server or the backend).

    None when the client sends no ClientHello, one without SNI, nothing within ``timeout``
    seconds, or goes away. ``MSG_PEEK`` returns at once while any byte is buffered, so a hello
    arriving in pieces is peeked again after a short pause (1 ms, doubling up to 50 ms).
    """
    deadline = time.monotonic() + timeout
    data, pause = b"", 0.001
    while True:
        try:
            return client_hello_sni(data)
        except NeedMore:
            pass
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        try:
            sock.settimeout(left)
            peeked = sock.recv(HEADER + MAX_RECORD, socket.MSG_PEEK)
        except OSError:
            return None
        if not peeked:
            return None  # the client closed without a byte
        if len(peeked) == len(data):
            time.sleep(min(pause, left))
            pause = min(pause * 2, 0.05)
        data = peeked


def connect_first(backends: list[str], *, timeout: float = CONNECT_TIMEOUT) -> tuple[socket.socket, str]:
    """A connection to the first of ``backends`` that accepts one, and its address; OSError
    naming every failure when none does."""
    failures = []
    for backend in backends:
        try:
            return socket.create_connection(parse_backend(backend), timeout=timeout), backend
        except (OSError, ValueError) as e:
            failures.append(f"{backend}: {e}")
    raise OSError("no backend accepted the connection: " + ("; ".join(failures) or "none is ready"))


def splice(
    client: socket.socket, backend: socket.socket, *, idle: float = IDLE_TIMEOUT
) -> tuple[int, int, str | None]:
    """Copy bytes both ways until both directions end; returns (bytes client -> backend, bytes
    backend -> client, the first error or None).

    One thread per direction, blocking. When one side sends EOF the other's write side is shut
    (a half-close passes through). An error in either direction, or ``idle`` seconds without a
    byte either way, shuts both sockets down, which ends the other direction too. The caller
    closes the sockets.
    """
    counts = [0, 0]
    errors: list[str] = []
    last = [time.monotonic()]

    def pump(direction: int, src: socket.socket, dst: socket.socket) -> None:
        try:
            while True:
                try:
                    chunk = src.recv(_CHUNK)
                except TimeoutError:
                    if time.monotonic() - last[0] < idle:
                        continue  # the other direction is busy
                    raise TimeoutError(f"no byte either way for {idle:g} s") from None
                if not chunk:
                    break
                dst.sendall(chunk)
                counts[direction] += len(chunk)
                last[0] = time.monotonic()
            with contextlib.suppress(OSError):
                dst.shutdown(socket.SHUT_WR)
        except OSError as e:
            errors.append(f"{type(e).__name__}: {e}")
            for s in (client, backend):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)

    for s in (client, backend):
        s.settimeout(idle)
    upstream = threading.Thread(target=pump, args=(0, client, backend), name="splice-up", daemon=True)
    upstream.start()
    pump(1, backend, client)
    upstream.join()
    return counts[0], counts[1], errors[0] if errors else None
