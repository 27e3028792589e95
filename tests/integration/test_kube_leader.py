"""Leader election on a real Lease: two candidates, exactly one leads; when the leader dies without
releasing, the other takes over once the Lease expires; when it stops gracefully it releases the Lease
and the other takes over at its next retry, long before expiry."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from controller.kube import apply as kapi
from controller.kube.leader import LeaderElector

pytestmark = pytest.mark.cluster

WaitFor = Callable[..., Any]
LEASE = "inference-controller"


class Candidate:
    """An elector and what its callbacks reported."""

    def __init__(self, api: Any, namespace: str, identity: str, timing: dict[str, float]) -> None:
        self.started = threading.Event()
        self.stopped = threading.Event()
        self.elector = LeaderElector(
            api,
            namespace=namespace,
            name=LEASE,
            identity=identity,
            on_started_leading=self.started.set,
            on_stopped_leading=self.stopped.set,
            lease_duration=timing["lease_duration"],
            renew_deadline=timing["renew_deadline"],
            retry_period=timing["retry_period"],
        )


@pytest.fixture
def candidates(api: Any, namespace: str) -> Iterator[Callable[..., list[Candidate]]]:
    made: list[Candidate] = []

    def make(*identities: str, **timing: float) -> list[Candidate]:
        out = [Candidate(api, namespace, identity, timing) for identity in identities]
        for c in out:
            c.elector.start()
        made.extend(out)
        return out

    yield make
    for c in made:
        c.elector.stop(release=False, timeout=10)


def lease_spec(api: Any, namespace: str) -> dict[str, Any]:
    lease = kapi.get(api, "coordination.k8s.io/v1", "Lease", namespace=namespace, name=LEASE)
    return (lease or {}).get("spec") or {}


def leaders(cands: list[Candidate]) -> list[str]:
    return [c.elector.identity for c in cands if c.elector.is_leader]


FAST = {"lease_duration": 4.0, "renew_deadline": 3.0, "retry_period": 0.5}


def test_of_two_candidates_exactly_one_leads(
    api: Any, namespace: str, candidates: Callable[..., list[Candidate]], wait_for: WaitFor
) -> None:
    cands = candidates("a", "b", **FAST)
    wait_for(lambda: leaders(cands), lambda ls: len(ls) == 1, message="a leader")
    holder = lease_spec(api, namespace)["holderIdentity"]
    renewed = lease_spec(api, namespace)["renewTime"]
    # Watch through several renewals (more than a lease duration): the same single leader throughout.
    for _ in range(3):
        wait_for(
            lambda: lease_spec(api, namespace)["renewTime"],
            lambda t, seen=renewed: t != seen,
            message="a renewal",
        )
        renewed = lease_spec(api, namespace)["renewTime"]
        assert leaders(cands) == [holder]
    assert [c.started.is_set() for c in cands].count(True) == 1
    assert lease_spec(api, namespace)["leaseTransitions"] == 0


def test_when_the_leader_dies_without_releasing_the_other_takes_over_after_expiry(
    api: Any, namespace: str, candidates: Callable[..., list[Candidate]], wait_for: WaitFor
) -> None:
    cands = candidates("a", "b", **FAST)
    wait_for(lambda: leaders(cands), lambda ls: len(ls) == 1, message="a leader")
    leader = next(c for c in cands if c.elector.is_leader)
    other = next(c for c in cands if c is not leader)
    died = time.monotonic()
    leader.elector.stop(release=False)  # as a crash would: the Lease still names the dead leader
    assert lease_spec(api, namespace)["holderIdentity"] == leader.elector.identity
    wait_for(lambda: other.started.is_set(), bool, timeout=30, message="the takeover")
    print(f"takeover after the leader died: {time.monotonic() - died:.1f}s (lease duration 4s)")
    spec = lease_spec(api, namespace)
    assert (spec["holderIdentity"], spec["leaseTransitions"]) == (other.elector.identity, 1)
    assert leaders(cands) == [other.elector.identity]


def test_a_graceful_stop_releases_the_lease_so_the_other_takes_over_at_once(
    api: Any, namespace: str, candidates: Callable[..., list[Candidate]], wait_for: WaitFor
) -> None:
    # A 60 s lease: a takeover by expiry would take a minute; a released lease is taken at the next retry.
    cands = candidates("a", "b", lease_duration=60.0, renew_deadline=10.0, retry_period=0.5)
    wait_for(lambda: leaders(cands), lambda ls: len(ls) == 1, message="a leader")
    leader = next(c for c in cands if c.elector.is_leader)
    other = next(c for c in cands if c is not leader)
    stopped = time.monotonic()
    leader.elector.stop()
    assert leader.stopped.is_set()
    assert not leader.elector.is_leader
    wait_for(lambda: other.started.is_set(), bool, timeout=20, message="the takeover of a released lease")
    print(f"takeover after a graceful stop: {time.monotonic() - stopped:.1f}s (lease duration 60s)")
    assert lease_spec(api, namespace)["holderIdentity"] == other.elector.identity


def test_a_leader_that_loses_its_lease_stops_leading(
    api: Any, namespace: str, candidates: Callable[..., list[Candidate]], wait_for: WaitFor
) -> None:
    (only,) = candidates("a", **FAST)
    wait_for(lambda: only.elector.is_leader, bool, message="leading")
    # Someone else takes the Lease by force (an operator, a split brain): ours can no longer renew it.
    kapi.apply(
        api,
        {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": LEASE, "namespace": namespace},
            "spec": {"holderIdentity": "intruder", "leaseDurationSeconds": 3600},
        },
        field_manager="intruder",
    )
    wait_for(lambda: only.stopped.is_set(), bool, timeout=30, message="stepping down")
    assert not only.elector.is_leader
    assert lease_spec(api, namespace)["holderIdentity"] == "intruder"


def test_timing_must_leave_room_to_renew() -> None:
    with pytest.raises(ValueError, match="lease_duration > renew_deadline > retry_period"):
        LeaderElector(
            None,
            namespace="x",
            name="y",
            identity="z",
            lease_duration=5,
            renew_deadline=5,
            on_started_leading=lambda: None,
            on_stopped_leading=lambda: None,
        )
