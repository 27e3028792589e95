"""HubClient on HTTP 429 and 503: no worker ever waits; the key is held for a jittered exponential
backoff that honours Retry-After, and a rate limit holds back only the account it was answered to.

Against the HF mirror stand-in on loopback (its fault knob answers the next n requests with a status
and a Retry-After); time is a fake clock that only moves when a test moves it.
"""

from __future__ import annotations

import email.utils
import threading
import time

import pytest

from controller.modelhub.client import HubClient, ModelSourceUnavailable
from standins.hub_mirror import DEFAULT_TOKEN, RunningMirror
from tests.unit.hub_support import QWEN_7B, Clock, hub_mirror, make_client, mirror

__all__ = ["hub_mirror", "mirror"]  # fixtures

SMALL = "Qwen/Qwen2.5-0.5B-Instruct"  # info, config.json, one header range = 3 requests


def test_a_429_fails_at_once_and_the_order_is_told_when_to_come_back(hub_mirror: RunningMirror) -> None:
    clock, outcomes = Clock(), list[str]()
    hub_mirror.inject_fault(429, retry_after="2", times=1)
    client = make_client(hub_mirror, clock=clock, on_call=outcomes.append, rand=lambda: 0.0)
    start = time.monotonic()
    with pytest.raises(ModelSourceUnavailable, match="HTTP 429") as err:
        client.fetch_facts(repo_id=SMALL, revision=None, token=None)
    assert time.monotonic() - start < 1.0  # nothing waited in the worker
    assert err.value.retry_after == 5.0  # the first backoff step (10 s, half of it fixed) beats the 2 s
    assert outcomes == ["rate_limited"]
    clock.now += 5.0
    assert client.fetch_facts(repo_id=SMALL, revision=None, token=None).name == SMALL
    assert [r.status for r in hub_mirror.requests()] == [429, 200, 200, 206]


def test_a_long_retry_after_is_honoured(hub_mirror: RunningMirror) -> None:
    clock = Clock()
    hub_mirror.inject_fault(429, retry_after="120", times=1)
    client = make_client(hub_mirror, clock=clock, rand=lambda: 0.0)
    with pytest.raises(ModelSourceUnavailable, match=r"HTTP 429.*retry after 120s") as err:
        client.fetch_facts(repo_id=SMALL, revision=None, token=None)
    assert err.value.retry_after == 120.0
    clock.now += 119
    with pytest.raises(ModelSourceUnavailable) as err:
        client.fetch_facts(repo_id=SMALL, revision=None, token=None)
    assert err.value.retry_after == pytest.approx(1.0)
    assert hub_mirror.request_count() == 1
    clock.now += 1
    assert client.fetch_facts(repo_id=SMALL, revision=None, token=None).name == SMALL


def test_a_retry_after_date_is_honoured(hub_mirror: RunningMirror) -> None:
    when = email.utils.formatdate(time.time() + 60, usegmt=True)
    hub_mirror.inject_fault(429, retry_after=when, times=1)
    with pytest.raises(ModelSourceUnavailable) as err:
        make_client(hub_mirror, rand=lambda: 0.0).fetch_facts(repo_id=SMALL, revision=None, token=None)
    assert err.value.retry_after is not None
    assert 58.0 <= err.value.retry_after <= 60.0  # the date has a one-second resolution


def test_a_503_is_asked_again_after_the_first_step_every_time(hub_mirror: RunningMirror) -> None:
    """A 5xx is fast: the key is held for the first step each time, so an order sees the Hub back
    within it once an outage ends (the e2e chaos run's 20 s of 503s)."""
    clock = Clock()
    hub_mirror.inject_fault(503)
    client = make_client(hub_mirror, clock=clock, rand=lambda: 0.5)
    waits = []
    for _ in range(4):
        with pytest.raises(ModelSourceUnavailable, match="HTTP 503") as err:
            client.fetch_facts(repo_id=SMALL, revision=None, token=None)
        assert err.value.status == 503 and err.value.retry_after is not None
        waits.append(err.value.retry_after)
        clock.now += err.value.retry_after
    assert waits == [7.5, 7.5, 7.5, 7.5]
    assert hub_mirror.request_count() == 4


def test_a_hub_that_takes_the_whole_timeout_backs_off_exponentially_up_to_the_cap() -> None:
    """A slow failure held a worker for the whole timeout: its key waits longer each time."""
    import socket
    import threading

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:  # accepts and never answers
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    clock = Clock()
    url = f"http://127.0.0.1:{server.getsockname()[1]}"
    client = HubClient(endpoint=url, timeout=0.3, clock=clock, rand=lambda: 0.5)
    waits = []
    try:
        for _ in range(8):
            with pytest.raises(ModelSourceUnavailable, match="did not answer") as err:
                client.fetch_facts(repo_id=SMALL, revision=None, token=None)
            assert err.value.slow and err.value.retry_after is not None
            waits.append(err.value.retry_after)
            clock.now += err.value.retry_after
    finally:
        stop.set()
        thread.join()
        for s in held:
            s.close()
        server.close()
    assert waits == [7.5, 15.0, 30.0, 60.0, 120.0, 240.0, 240.0, 240.0]  # steps 10 s...320 s, 3/4 of each


def test_a_hub_that_cannot_be_reached_is_asked_again_after_the_first_step_every_time() -> None:
    """No connection at all says nothing about one repository, and costs a worker nothing: an
    outage never stretches an order's wait past the first step, so the order sees the Hub back
    within it (the chaos test's Hub outage). A 503 still backs off (the test above)."""
    import socket

    with socket.socket() as s:  # a port nothing listens on: connection refused
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    clock = Clock()
    client = HubClient(endpoint=f"http://127.0.0.1:{port}", timeout=5.0, clock=clock, rand=lambda: 0.5)
    waits = []
    for _ in range(4):
        with pytest.raises(ModelSourceUnavailable, match="could not be reached") as err:
            client.fetch_facts(repo_id=SMALL, revision=None, token=None)
        assert not err.value.slow and err.value.retry_after is not None
        waits.append(err.value.retry_after)
        clock.now += err.value.retry_after
    assert waits == [7.5, 7.5, 7.5, 7.5]


def test_the_jitter_spreads_the_waits_of_clients_refused_together(hub_mirror: RunningMirror) -> None:
    waits = set()
    for rand in (0.0, 0.3, 0.9):
        hub_mirror.inject_fault(429, retry_after="1", times=1)
        with pytest.raises(ModelSourceUnavailable) as err:
            make_client(hub_mirror, rand=lambda r=rand: r).fetch_facts(
                repo_id=SMALL, revision=None, token=None
            )
        waits.add(err.value.retry_after)
    assert len(waits) == 3
    assert min(w for w in waits if w is not None) >= 1.0


def test_a_retry_after_holds_back_the_other_calls_of_that_account_only(hub_mirror: RunningMirror) -> None:
    """A rate limit is the account's: other models of the anonymous account are not asked until it has
    passed, and a call with a token of its own is."""
    clock = Clock()
    hub_mirror.inject_fault(429, retry_after="120", times=1)
    client = make_client(hub_mirror, clock=clock)
    with pytest.raises(ModelSourceUnavailable):
        client.fetch_facts(repo_id=SMALL, revision=None, token=None)
    for _ in range(20):
        with pytest.raises(ModelSourceUnavailable, match="asked again in 120s") as err:
            client.fetch_facts(repo_id=QWEN_7B, revision=None, token=None)
        assert err.value.retry_after is not None and err.value.retry_after >= 120
    assert hub_mirror.request_count() == 1
    assert client.fetch_facts(repo_id=QWEN_7B, revision=None, token=DEFAULT_TOKEN).name == QWEN_7B
    clock.now += 1000
    assert client.fetch_facts(repo_id=QWEN_7B, revision=None, token=None).name == QWEN_7B


def test_a_rate_limit_does_not_hold_a_worker_from_other_orders(hub_mirror: RunningMirror) -> None:
    """Real time: while one model keeps answering 429 with a long Retry-After, calls for it return at
    once, and a cached model's orders are answered meanwhile."""
    client = HubClient(endpoint=hub_mirror.url)
    client.fetch_facts(repo_id=SMALL, revision=None, token=None)
    hub_mirror.inject_fault(429, retry_after="30", match=QWEN_7B)
    start = time.monotonic()
    errors: list[Exception] = []

    def order() -> None:
        try:
            client.fetch_facts(repo_id=QWEN_7B, revision=None, token=None)
        except ModelSourceUnavailable as e:
            errors.append(e)

    threads = [threading.Thread(target=order) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert client.fetch_facts(repo_id=SMALL, revision=None, token=None).name == SMALL
    assert time.monotonic() - start < 5.0
    assert len(errors) == 4


def test_a_shard_rate_limited_mid_fetch_is_asked_again_after_the_backoff(hub_mirror: RunningMirror) -> None:
    clock = Clock()
    hub_mirror.inject_fault(429, match="model-00003-of-00004", retry_after="1", times=1)
    client = make_client(hub_mirror, clock=clock)
    with pytest.raises(ModelSourceUnavailable) as err:
        client.fetch_facts(repo_id=QWEN_7B, revision=None, token=None)
    assert err.value.retry_after is not None
    clock.now += err.value.retry_after
    assert client.fetch_facts(repo_id=QWEN_7B, revision=None, token=None).parameter_count == 7_615_616_512
    assert hub_mirror.request_count() == 6 + 7  # the refused attempt, then the whole fetch


def test_success_forgets_the_backoff(hub_mirror: RunningMirror) -> None:
    clock = Clock()
    client = make_client(hub_mirror, clock=clock, rand=lambda: 0.0)
    for _ in range(3):
        hub_mirror.inject_fault(503, times=1)
        with pytest.raises(ModelSourceUnavailable) as err:
            client.fetch_facts(repo_id=SMALL, revision="main", token=None)
        assert err.value.retry_after == 5.0  # always the first step: each failure followed a success
        clock.now += 5.0
        client.fetch_facts(repo_id=SMALL, revision="main", token=None)
        clock.now += 100  # past the revision TTL: the next call asks the Hub
