"""A short chaos run (bench/chaos): the same seeded churn twice, clean and with one SIGKILL of the
leader of two replicas, one webhook restart and the Hub away for 20 s; nothing may be lost."""

from __future__ import annotations

import json

import pytest

from bench.chaos import verdict
from bench.chaos.faults import Schedule
from bench.chaos.run import Shape, cleanup, run
from bench.chaos.stack import on_platform
from testkit.platform import Platform

pytestmark = pytest.mark.cluster

SEED = 7
SHAPE = Shape(seconds=40, namespaces=2, creates=6, max_live=5)
FAULTS = Schedule(
    kill_every=(20.0, 40.0),
    first_kill=30.0,  # one kill, inside the Hub outage: the new leader must not need the Hub
    kills_until=30.0,
    webhook_at=10.0,
    webhook_down=5.0,
    hub_at=22.0,
    hub_seconds=20.0,
)

# Settled: nothing changed for longer than the controller's look-again for a transient reason (a Hub
# 5xx is asked again after at most 10 s), so an order still reading ModelSourceUnavailable when the
# Hub outage ends is not taken for settled.
QUIET = 12.0


def test_a_churn_through_a_leader_kill_a_webhook_restart_and_a_hub_outage_loses_nothing(
    platform: Platform,
) -> None:
    with on_platform(platform) as stack:
        clean = run(stack, label="ci-clean", seed=SEED, shape=SHAPE, schedule=None, quiet=QUIET)
        # Not waited for: the fleet has room for both runs' few orders.
        cleanup(stack, [f"chaos-ci-clean-{SEED}-{i}" for i in range(SHAPE.namespaces)], wait=False)
        faulted = run(stack, label="ci-faulted", seed=SEED, shape=SHAPE, schedule=FAULTS, quiet=QUIET)
        cleanup(stack, [f"chaos-ci-faulted-{SEED}-{i}" for i in range(SHAPE.namespaces)], wait=False)
    print(json.dumps({"clean": clean.figures, "faulted": faulted.figures}))
    faults = faulted.figures["faults"]
    assert (faults["leader_kills"], faults["webhook_restarts"]) == (1, 1), faulted.figures
    assert faults["hub_outage_seconds"] >= 19, faulted.figures
    assert faults["injection_errors"] == [], faults
    assert faulted.figures["hub_outage_samples"] >= 5, faulted.figures
    assert faulted.figures["ready_orders_watched_through_hub_outage"] >= 1, faulted.figures
    lost = {**faulted.lost, "status_differences": verdict.differences(clean.statuses, faulted.statuses)}
    lost["clean_run_lost"] = [f"{k}: {v}" for k, vs in clean.lost.items() for v in vs]
    assert {k: v for k, v in lost.items() if v} == {}, faulted.figures
