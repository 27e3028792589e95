"""The memoized desired workload (``controller.desired``) answers exactly as rendering afresh would:
a changed input (order spec or uid, class, plan, settings, fetch) is rendered again, what a caller
does to an applied object never reaches a later answer, and drift is found once the live object
changes. The parse memo (``controller.caching.parsed``) answers per uid and resourceVersion."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest

from controller import desired, render
from controller.caching import parsed
from controller.caching.memo import Memo
from controller.live import drift
from controller.planner import LaunchPlan
from controller.snapshot import Snapshot
from shared import names
from shared.api.order import InferenceService
from tests.unit.controller.builders import class_dict, make_order, order_dict
from tests.unit.controller.snapshots import GPU, MIG, MODEL, REVISION, SETTINGS, SMALL, klass, plan_on, snap

Obj = dict[str, Any]
FETCH = render.fetch_spec(SMALL, REVISION)


@pytest.fixture(autouse=True)
def _fresh() -> Iterator[None]:
    desired.clear()
    yield
    desired.clear()


def reference(s: Snapshot, plan: LaunchPlan, fetch: render.FetchSpec = FETCH) -> list[Obj]:
    """What the decision applied before the memo: rendered afresh, each object hashed."""
    assert s.klass is not None
    token_hash = names.short_hash(s.token, 16) if s.token and render.requires_token(s.klass.spec) else None
    objs = render.workload(
        s.order, plan, s.klass.spec, s.settings, revision=fetch.revision, fetch=fetch, token_hash=token_hash
    )
    for o in objs:
        o["metadata"].setdefault("annotations", {})[desired.APPLIED_HASH] = names.short_hash(
            drift.stable_json(o), 16
        )
    return objs


def applied(s: Snapshot, plan: LaunchPlan, fetch: render.FetchSpec = FETCH) -> list[Obj]:
    assert s.klass is not None
    return list(desired.wanted(s, plan, s.klass.spec, fetch).apply)


def _other_order() -> InferenceService:
    return make_order(spec={"model": {"ref": {"name": MODEL}, "authSecretRef": {"name": "hf-token"}}})


CHANGES: dict[str, Any] = {
    "order spec": lambda s, plan, fetch: (replace(s, order=_other_order()), plan, fetch),
    "order uid": lambda s, plan, fetch: (
        replace(
            s,
            order=s.order.model_copy(update={"metadata": s.order.metadata.model_copy(update={"uid": "u-2"})}),
        ),
        plan,
        fetch,
    ),
    "class": lambda s, plan, fetch: (
        replace(s, klass=klass(spec={"scaling": {"minReplicas": 1, "maxReplicas": 7}})),
        plan,
        fetch,
    ),
    "plan": lambda s, plan, fetch: (s, plan_on(MIG), fetch),
    "settings": lambda s, plan, fetch: (
        replace(s, settings=SETTINGS.model_copy(update={"model_storage_class": "fast-nvme"})),
        plan,
        fetch,
    ),
    "fetch": lambda s, plan, fetch: (s, plan, replace(fetch, include=(*fetch.include, "extra.json"))),
    "token": lambda s, plan, fetch: (replace(s, token="a-new-token", has_token=True), plan, fetch),
}


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_a_changed_input_is_rendered_afresh(change: str) -> None:
    s, plan = snap(), plan_on(GPU)
    assert applied(s, plan) == reference(s, plan)
    s2, plan2, fetch2 = CHANGES[change](s, plan, FETCH)
    want = reference(s2, plan2, fetch2)
    assert want != reference(s, plan), f"the {change} must change the workload for this test to mean anything"
    assert applied(s2, plan2, fetch2) == want
    assert applied(s, plan) == reference(s, plan), "and back"


def test_equal_inputs_in_new_objects_give_the_same_answer() -> None:
    s, plan = snap(), plan_on(GPU)
    first = applied(s, plan)
    again = replace(
        s,
        order=InferenceService.model_validate(copy.deepcopy(s.order.model_dump(by_alias=True))),
        klass=klass(),
        settings=SETTINGS.model_copy(),
    )
    plan_copy = LaunchPlan.model_validate_json(plan.model_dump_json())
    assert applied(again, plan_copy, replace(FETCH)) == first == reference(s, plan)


def test_what_a_caller_does_to_an_applied_object_never_reaches_a_later_answer() -> None:
    s, plan = snap(), plan_on(GPU)
    for o in applied(s, plan):
        o["metadata"]["annotations"][desired.APPLIED_HASH] = "changed"
        o["metadata"]["labels"].clear()
        o.setdefault("spec", {})["storageClassName"] = "standard"
    assert applied(s, plan) == reference(s, plan)


def _live(objs: list[Obj], version: str) -> tuple[Obj, ...]:
    """The objects as the API server stores them: with a uid and a resourceVersion."""
    out = []
    for i, o in enumerate(objs):
        o = copy.deepcopy(o)
        o["metadata"]["uid"] = f"live-{i}"
        o["metadata"]["resourceVersion"] = version
        out.append(o)
    return tuple(out)


def test_drift_is_found_once_the_live_object_changes() -> None:
    s, plan = snap(), plan_on(GPU)
    steady = replace(s, owned=_live(reference(s, plan), "10"))
    for _ in range(2):  # the second answer comes from the memo of clean versions
        assert applied(steady, plan) == []
    edited = []
    for o in steady.owned:
        if o["kind"] == "Deployment":
            o = copy.deepcopy(o)
            o["spec"]["template"]["spec"]["containers"][0]["image"] = "evil/vllm:latest"
            o["metadata"]["resourceVersion"] = "11"
        edited.append(o)
    drifted = replace(steady, owned=tuple(edited))
    assert steady.klass is not None
    w = desired.wanted(drifted, plan, steady.klass.spec, FETCH)
    assert [o["kind"] for o in w.apply] == ["Deployment"]
    assert [(t, reason) for t, reason, _ in w.events] == [("Warning", "DriftCorrected")]
    assert "image" in w.events[0][2]
    assert w.apply[0] == next(o for o in reference(s, plan) if o["kind"] == "Deployment")


def test_a_live_object_with_another_applied_hash_is_applied() -> None:
    s, plan = snap(), plan_on(GPU)
    steady = replace(s, owned=_live(reference(s, plan), "10"))
    assert applied(steady, plan) == []
    moved = replace(steady, settings=SETTINGS.model_copy(update={"probe_period_seconds": 1.0}))
    assert applied(moved, plan) == [], "a setting the workload does not carry changes nothing"
    newer = plan_on(MIG)
    before = {desired_hash(o) for o in reference(s, plan)}
    changed = [o for o in reference(s, newer) if desired_hash(o) not in before]
    assert changed and applied(steady, newer) == changed


def desired_hash(o: Obj) -> str:
    return str(o["metadata"]["annotations"][desired.APPLIED_HASH])


def test_the_memo_is_bounded() -> None:
    memo: Memo[str, str] = Memo(2)
    for k in "abc":
        memo.put(k, k.upper())
    assert (len(memo), memo.get("a"), memo.get("c")) == (2, None, "C")


# ------------------------------------------------------------------ parsed


def test_a_parsed_object_is_reused_for_its_uid_and_resource_version() -> None:
    p = parsed.Parsed(InferenceService)
    raw = order_dict()
    first = p(raw)
    assert p(copy.deepcopy(raw)) is first
    edited = order_dict(spec={"model": {"ref": {"name": "other/model"}}}, metadata={"resourceVersion": "2"})
    assert p(edited).spec.model.ref.name == "other/model"
    recreated = order_dict(metadata={"uid": "u-9"})
    assert p(recreated).metadata.uid == "u-9"
    unversioned = order_dict(metadata={"resourceVersion": None})
    assert p(unversioned) is not p(unversioned)


def test_the_shared_parsers_read_classes() -> None:
    raw = class_dict(metadata={"uid": "c-1"})
    assert parsed.CLASSES(raw) is parsed.CLASSES(copy.deepcopy(raw))
