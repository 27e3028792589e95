"""Reads from tenant pods end in time and in bytes, against real local HTTP servers that trickle,
stream without end, or trickle their headers (issue 21, item 3)."""

from __future__ import annotations

import gzip
import socket
import threading
import time
import tracemalloc
from collections.abc import Callable, Iterator

import httpx
import pytest

from controller.live import bounded_http
from controller.live.probe import Prober
from controller.live.progress_book import ProgressBook

Serve = Callable[[socket.socket], None]


@pytest.fixture
def server() -> Iterator[Callable[[Serve], str]]:
    """``start(handler)``: a loopback server calling ``handler(conn)`` per connection; its address."""
    stop = threading.Event()
    socks: list[socket.socket] = []

    def start(handler: Serve) -> str:
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        listener.settimeout(0.2)
        socks.append(listener)

        def loop() -> None:
            while not stop.is_set():
                try:
                    conn, _ = listener.accept()
                except OSError:
                    continue
                threading.Thread(target=_guarded, args=(handler, conn), daemon=True).start()

        threading.Thread(target=loop, daemon=True).start()
        host, port = listener.getsockname()
        return f"{host}:{port}"

    def _guarded(handler: Serve, conn: socket.socket) -> None:
        with conn:
            try:
                conn.recv(65536)  # the request
                handler(conn)
            except OSError:
                pass  # the client hung up: what a bounded reader does

    yield start
    stop.set()
    for s in socks:
        s.close()


HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"


def trickle(conn: socket.socket) -> None:
    """A byte every 0.1 s, forever: each read returns well within any per-read timeout."""
    conn.sendall(HEAD + b"\r\n")
    while True:
        conn.sendall(b"x")
        time.sleep(0.1)


def trickle_headers(conn: socket.socket) -> None:
    for _ in range(10_000):
        conn.sendall(b"X")
        time.sleep(0.1)


def flood(conn: socket.socket) -> None:
    """An endless fast body, 64 KiB at a time."""
    conn.sendall(HEAD + b"\r\n")
    chunk = b"model_fetcher_bytes_done 1\n" * 2400
    while True:
        conn.sendall(chunk)


def answer(body: bytes, extra: bytes = b"") -> Serve:
    def serve(conn: socket.socket) -> None:
        conn.sendall(HEAD + extra + b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(body) + body)

    return serve


def timed(fn: Callable[[], object]) -> tuple[object, float]:
    t0 = time.monotonic()
    try:
        out: object = fn()
    except Exception as e:  # the test asserts on the exception's type
        out = e
    return out, time.monotonic() - t0


@pytest.mark.parametrize("handler", [trickle, trickle_headers], ids=["body", "headers"])
def test_a_trickle_ends_at_the_deadline(server: Callable[[Serve], str], handler: Serve) -> None:
    address = server(handler)
    with bounded_http.client(seconds=1.0) as c:
        out, took = timed(lambda: bounded_http.get(c, f"http://{address}/", limit=1 << 20))
    assert isinstance(out, httpx.TimeoutException), out
    assert took < 1.5  # a per-read timeout alone never ends: every read gets a byte in 0.1 s


def test_an_endless_fast_body_stops_at_the_limit_with_little_memory(server: Callable[[Serve], str]) -> None:
    address = server(flood)
    tracemalloc.start()
    try:
        with bounded_http.client(seconds=10.0) as c:
            out, took = timed(lambda: bounded_http.get(c, f"http://{address}/", limit=64 * 1024))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert isinstance(out, bounded_http.BodyTooLarge), out
    assert took < 2.0
    assert peak < 2 * 1024 * 1024, peak


def test_a_declared_length_beyond_the_limit_is_refused_before_reading(server: Callable[[Serve], str]) -> None:
    address = server(answer(b"x" * 5000))
    with bounded_http.client(seconds=5.0) as c:
        with pytest.raises(bounded_http.BodyTooLarge, match="declares 5000 bytes"):
            bounded_http.get(c, f"http://{address}/", limit=4096)
        assert bounded_http.get(c, f"http://{address}/", limit=5000).body == b"x" * 5000


def test_a_compressed_answer_is_refused_rather_than_inflated(server: Callable[[Serve], str]) -> None:
    address = server(answer(gzip.compress(b"0" * 10_000_000), b"Content-Encoding: gzip\r\n"))
    with bounded_http.client(seconds=5.0) as c, pytest.raises(bounded_http.BodyTooLarge, match="compressed"):
        bounded_http.get(c, f"http://{address}/", limit=1 << 20)


def test_the_probe_fails_in_time_on_a_trickle_and_on_a_flood(server: Callable[[Serve], str]) -> None:
    prober = Prober(ca_file="", address_override="", timeout=1.0)
    try:
        for handler in (trickle, flood):
            url = f"http://{server(handler)}"
            t0 = time.monotonic()
            result = prober.probe(url, "t")
            assert not result.ok and time.monotonic() - t0 < 1.5, (handler.__name__, result)
        models = b'{"data": [{"id": "m"}]}'
        ok = prober.probe(f"http://{server(answer(models))}", "t")
        assert ok.ok, ok.detail
    finally:
        prober.close()


def test_a_scrape_of_a_trickling_fetcher_records_an_error_in_time(server: Callable[[Serve], str]) -> None:
    done = threading.Event()
    book = ProgressBook(on_done=lambda key: done.set(), timeout=1.0)
    try:
        t0 = time.monotonic()
        book.request(("ns", "o"), "pod-a", server(trickle))
        assert done.wait(3.0)
        assert time.monotonic() - t0 < 1.5
        record = book.state(("ns", "o"))
        assert record.error.startswith("GET /metrics failed") and not record.in_flight, record
        done.clear()
        book.request(("ns", "o"), "pod-a", server(flood))
        assert done.wait(3.0)
        assert book.state(("ns", "o")).error == "GET /metrics failed: BodyTooLarge"
        done.clear()
        book.request(("ns", "o"), "pod-a", server(answer(b"model_fetcher_bytes_done 42\n")))
        assert done.wait(3.0)
        assert book.state(("ns", "o")).done == 42
    finally:
        book.close()
