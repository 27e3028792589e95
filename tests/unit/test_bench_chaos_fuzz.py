"""The pure parts of bench/chaos and bench/fuzz: the churn plan and the fuzz generator and judge."""

from __future__ import annotations

import itertools

from bench.chaos.churn import SERVED, expected, plan
from bench.chaos.faults import Schedule
from bench.fuzz.gen import Generator
from bench.fuzz.judge import contract_refusals, outcome_of
from controller.kube.errors import ApiUnavailable, Invalid


def test_the_same_seed_plans_the_same_churn_within_its_bounds() -> None:
    ops = plan(5, 300, namespaces=3, creates=30, max_live=12)
    assert ops == plan(5, 300, namespaces=3, creates=30, max_live=12)
    assert sum(op.verb == "create" for op in ops) == 30
    assert {op.verb for op in ops} == {"create", "edit", "delete"}
    assert ops[-1].at <= 0.75 * 300
    live: set[str] = set()
    for op in ops:
        if op.verb == "create":
            assert op.key not in live
            live.add(op.key)
        else:
            assert op.key in live
            if op.verb == "delete":
                live.remove(op.key)
        assert len(live) <= 12
    assert set(expected(ops)) == live


def test_the_full_schedule_has_one_of_each_fault_and_kills_every_20_to_40_seconds() -> None:
    events = Schedule.full(300).events(1)
    whats = [w for _, w in events]
    for one in ("apiserver", "etcd", "webhook", "hub", "hub_back"):
        assert whats.count(one) == 1
    kills = [t for t, w in events if w == "kill"]
    assert len(kills) >= 5
    assert all(20 <= b - a <= 40 for a, b in itertools.pairwise(kills))


def test_the_fuzz_generator_is_seeded_and_its_valid_cases_pass_the_contract() -> None:
    a, b = Generator(2, ["n"], "l"), Generator(2, ["n"], "l")
    cases = [a.case(i) for i in range(400)]
    assert cases == [b.case(i) for i in range(400)]
    valid = [c for c in cases if c.valid]
    assert len(valid) > 100
    assert all(contract_refusals(c.kind, c.obj) == [] for c in valid)
    broken = [c for c in cases if not c.valid]
    assert sum(bool(contract_refusals(c.kind, c.obj)) for c in broken) > 0.8 * len(broken)
    assert {c.kind for c in cases} == {"InferenceService", "InferenceServiceClass", "InferenceRecipe"}


def test_the_answers_are_told_apart() -> None:
    assert outcome_of(Invalid("spec.x: Invalid value", status=422)) == "refused_by_schema"
    denied = 'admission webhook "validate.inferenceservices.ai.deckhouse.io" denied the request: x'
    assert outcome_of(Invalid(denied, status=422)) == "refused_by_webhook"
    assert outcome_of(ApiUnavailable('failed calling webhook "x": connection refused', status=500)) == (
        "webhook_unreachable_or_5xx"
    )
    assert outcome_of(ApiUnavailable("no answer", status=0)) == "api_unavailable"
    assert SERVED
