"""HubClient on HTTP 429 and 503: Retry-After honoured, jittered exponential backoff, bounded.

Against the HF mirror stand-in on loopback (its fault knob answers the next n requests with a status
and a Retry-After); waits go to a fake clock, except in the one test that shows a real wait.
"""

from __future__ import annotations

import email.utils
import time

import pytest

from controller.hub import HubClient, ModelSourceUnavailable, RetryPolicy
from standins.hub_mirror import RunningMirror
from tests.unit.hub_support import QWEN_7B, Clock, hub_mirror, make_client, mirror

__all__ = ["hub_mirror", "mirror"]  # fixtures

SMALL = "Qwen/Qwen2.5-0.5B-Instruct"  # info, config.json, one header range = 3 requests


def test_a_429_with_retry_after_is_waited_out_and_the_call_succeeds(hub_mirror: RunningMirror) -> None:
    clock, outcomes = Clock(), list[str]()
    hub_mirror.inject_fault(429, retry_after="2", times=2)
    facts = make_client(hub_mirror, clock=clock, on_call=outcomes.append, rand=lambda: 0.0).fetch_facts(
        repo_id=SMALL, revision=None, token=None
    )
    assert facts.name == SMALL
    assert [r.status for r in hub_mirror.requests()] == [429, 429, 200, 200, 206]
    assert outcomes == ["rate_limited", "rate_limited", "ok", "ok", "ok"]
    assert clock.slept == [2.0, 2.0]  # never less than Retry-After (the backoff step is smaller)


def test_a_retry_after_date_is_honoured(hub_mirror: RunningMirror) -> None:
    clock = Clock()
    when = email.utils.formatdate(time.time() + 5, usegmt=True)
    hub_mirror.inject_fault(429, retry_after=when, times=1)
    make_client(hub_mirror, clock=clock, rand=lambda: 0.0).fetch_facts(
        repo_id=SMALL, revision=None, token=None
    )
    (waited,) = clock.slept
    assert 3.0 <= waited <= 5.0  # the date has a one-second resolution


def test_a_503_without_retry_after_backs_off_exponentially_with_jitter_then_gives_up(
    hub_mirror: RunningMirror,
) -> None:
    clock, outcomes = Clock(), list[str]()
    hub_mirror.inject_fault(503)
    client = make_client(hub_mirror, clock=clock, on_call=outcomes.append, rand=lambda: 0.5)
    with pytest.raises(ModelSourceUnavailable, match="HTTP 503") as err:
        client.fetch_facts(repo_id=SMALL, revision=None, token=None)
    policy = RetryPolicy()
    assert hub_mirror.request_count() == policy.attempts
    assert outcomes == ["unavailable"] * policy.attempts
    assert clock.slept == [0.75, 1.5, 3.0]  # steps 1, 2, 4 s: half fixed, half drawn (0.5 here)
    assert err.value.status == 503
    assert err.value.retry_after == 6.0  # the next wait it gave up on


def test_the_jitter_spreads_the_waits_of_clients_refused_together(hub_mirror: RunningMirror) -> None:
    waits = set()
    for rand in (0.0, 0.3, 0.9):
        clock = Clock()
        hub_mirror.inject_fault(429, retry_after="1", times=1)
        make_client(hub_mirror, clock=clock, rand=lambda r=rand: r).fetch_facts(
            repo_id=SMALL, revision=None, token=None
        )
        waits.add(clock.slept[0])
    assert len(waits) == 3
    assert min(waits) >= 1.0


def test_a_retry_after_beyond_the_budget_gives_up_at_once_and_carries_the_hint(
    hub_mirror: RunningMirror,
) -> None:
    clock = Clock()
    hub_mirror.inject_fault(429, retry_after="120")
    client = make_client(hub_mirror, clock=clock)
    with pytest.raises(ModelSourceUnavailable, match=r"HTTP 429.*retry after 120s") as err:
        client.fetch_facts(repo_id=SMALL, revision=None, token=None)
    assert hub_mirror.request_count() == 1
    assert clock.slept == []
    assert err.value.retry_after is not None
    assert err.value.retry_after >= 120


def test_a_retry_after_holds_back_the_other_orders_of_the_client(hub_mirror: RunningMirror) -> None:
    """A rate limit is the client's: other models are not asked until it has passed."""
    clock = Clock()
    hub_mirror.inject_fault(429, retry_after="120", times=1)
    client = make_client(hub_mirror, clock=clock)
    with pytest.raises(ModelSourceUnavailable):
        client.fetch_facts(repo_id=SMALL, revision=None, token=None)
    for _ in range(20):
        with pytest.raises(ModelSourceUnavailable, match="asked again in 120s") as err:
            client.fetch_facts(repo_id=QWEN_7B, revision=None, token=None)
        assert err.value.retry_after == pytest.approx(120)
    assert hub_mirror.request_count() == 1
    clock.now += 121
    assert client.fetch_facts(repo_id=QWEN_7B, revision=None, token=None).name == QWEN_7B


def test_the_waits_of_one_call_stay_within_the_budget(hub_mirror: RunningMirror) -> None:
    clock = Clock()
    hub_mirror.inject_fault(429, retry_after="9")
    client = make_client(
        hub_mirror, clock=clock, rand=lambda: 0.99, retry=RetryPolicy(attempts=10, budget=30)
    )
    with pytest.raises(ModelSourceUnavailable):
        client.fetch_facts(repo_id=SMALL, revision=None, token=None)
    assert sum(clock.slept) <= 30
    assert len(clock.slept) == 2  # 9.5 + 10 s; a third wait would pass 30 s
    assert hub_mirror.request_count() == 3


def test_a_shard_rate_limited_mid_fetch_is_retried_and_the_facts_complete(hub_mirror: RunningMirror) -> None:
    clock = Clock()
    hub_mirror.inject_fault(429, match="model-00003-of-00004", retry_after="1", times=1)
    facts = make_client(hub_mirror, clock=clock).fetch_facts(repo_id=QWEN_7B, revision=None, token=None)
    assert facts.parameter_count == 7_615_616_512
    assert hub_mirror.request_count() == 8  # 7 + the refused header read
    assert len(clock.slept) == 1


def test_a_real_wait_for_retry_after(hub_mirror: RunningMirror) -> None:
    """No fake clock: the client really waits the second the mirror asked for."""
    hub_mirror.inject_fault(429, retry_after="1", times=1)
    start = time.monotonic()
    HubClient(endpoint=hub_mirror.url).fetch_facts(repo_id=SMALL, revision=None, token=None)
    assert 1.0 <= time.monotonic() - start < 5.0
    assert [r.status for r in hub_mirror.requests()][:2] == [429, 200]
