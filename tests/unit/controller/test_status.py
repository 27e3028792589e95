"""Status is computed once from the verdicts; events only on transitions."""

from __future__ import annotations

from controller.conditions.status import StatusFields, build_status, status_changed, transitions
from shared import reasons as r
from shared.api.order import Endpoint
from shared.conditions import false, true
from tests.unit.controller.builders import make_order

NOW = "2026-01-01T00:00:00Z"
LATER = "2026-01-01T00:05:00Z"


def test_status_carries_the_orders_generation_and_every_condition() -> None:
    order = make_order(metadata={"generation": 3})
    s = build_status(order, {r.CLASS_RESOLVED: false(r.CLASS_NOT_FOUND, "no class")}, StatusFields(), now=NOW)
    assert s.observed_generation == 3
    assert [c.type for c in s.conditions or []] == list(r.ALL_CONDITIONS)
    assert all(c.observed_generation == 3 for c in s.conditions or [])
    assert s.phase == "Pending"


def test_a_second_identical_reconcile_changes_nothing() -> None:
    order = make_order()
    verdicts = {r.CLASS_RESOLVED: true(r.RESOLVED), r.MODEL_RESOLVED: false(r.MODEL_NOT_FOUND, "gone")}
    first = build_status(order, verdicts, StatusFields(), now=NOW)
    order.status = first
    second = build_status(order, verdicts, StatusFields(), now=LATER)
    assert not status_changed(first, second)
    assert transitions(first, second) == []


def test_a_transition_records_an_event_per_changed_condition_and_phase() -> None:
    order = make_order()
    first = build_status(order, {r.CLASS_RESOLVED: false(r.CLASS_NOT_FOUND, "no")}, StatusFields(), now=NOW)
    order.status = first
    second = build_status(
        order,
        {r.CLASS_RESOLVED: true(r.RESOLVED), r.MODEL_RESOLVED: false(r.MODEL_NOT_FOUND, "gone")},
        StatusFields(endpoint=Endpoint(url="https://x", type="ClusterLocal")),
        now=LATER,
    )
    reasons = [t.reason for t in transitions(first, second)]
    assert r.RESOLVED in reasons and r.MODEL_NOT_FOUND in reasons and "PhaseFailed" in reasons
    assert second.endpoint is not None and second.endpoint.url == "https://x"


def test_a_workload_on_its_way_is_a_normal_event_and_a_failed_one_a_warning() -> None:
    order = make_order()
    first = build_status(order, {}, StatusFields(), now=NOW)
    order.status = first

    def kinds(reason: str) -> dict[str, str]:
        verdicts = {
            r.CLASS_RESOLVED: true(r.RESOLVED),
            r.MODEL_RESOLVED: true(r.RESOLVED),
            r.PLANNED: true(r.PLANNED_OK),
            r.WORKLOAD_READY: false(reason, "m"),
        }
        new = build_status(order, verdicts, StatusFields(), now=LATER)
        return {t.reason: t.type for t in transitions(first, new)}

    assert kinds(r.PROGRESSING)[r.PROGRESSING] == "Normal", "waiting for a replica is no warning"
    assert kinds(r.WORKLOAD_FAILED)[r.WORKLOAD_FAILED] == "Warning"


def test_the_status_patch_clears_what_the_new_status_no_longer_has() -> None:
    from controller.conditions.status import merge_patch

    old = {"phase": "Ready", "authSecretName": "x-auth", "resolved": {"cpu": "4", "sharePercent": 50}}
    new = {"phase": "Ready", "resolved": {"cpu": "4"}}
    assert merge_patch(old, new) == {
        "phase": "Ready",
        "authSecretName": None,
        "resolved": {"cpu": "4", "sharePercent": None},
    }


def test_a_cached_order_older_than_our_last_status_write_is_not_acted_on() -> None:
    from controller.reconciler import _older

    assert _older("41", "42")
    assert not _older("42", "42")
    assert not _older("43", "42")
    assert not _older("41", None)
    assert not _older("abc", "42"), "an opaque version is never taken as older"
