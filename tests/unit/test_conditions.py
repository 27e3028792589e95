"""Conditions and phase: every row of api.md section 3, as table tests."""

from __future__ import annotations

import pytest

from shared import reasons as r
from shared.api.condition import Condition
from shared.conditions import chain_conditions, derive_phase, false, find, set_condition, true, unknown

T0 = "2026-01-01T00:00:00Z"
T1 = "2026-01-01T00:01:00Z"


def cond(type_: str, status: str, reason: str) -> Condition:
    return Condition(type=type_, status=status, reason=reason, message="", last_transition_time=T0)


def all_true(**overrides: tuple[str, str]) -> list[Condition]:
    base = {
        r.CLASS_RESOLVED: ("True", r.RESOLVED),
        r.MODEL_RESOLVED: ("True", r.RESOLVED),
        r.PLANNED: ("True", r.PLANNED_OK),
        r.WORKLOAD_READY: ("True", r.AVAILABLE),
        r.READY: ("True", r.SERVING),
        r.SCALING_HEALTHY: ("True", r.SCALING_HEALTHY_OK),
    }
    base.update(overrides)
    return [cond(t, s, why) for t, (s, why) in base.items()]


def test_set_condition_keeps_transition_time_when_only_the_reason_changes() -> None:
    first = set_condition([], r.READY, false(r.HEALTH_CHECK_FAILED, "a"), generation=1, now=T0)
    second = set_condition(first, r.READY, false(r.SERVICE_UNHEALTHY, "b"), generation=2, now=T1)
    c = find(second, r.READY)
    assert c is not None
    assert (c.reason, c.last_transition_time, c.observed_generation) == (r.SERVICE_UNHEALTHY, T0, 2)


def test_set_condition_moves_transition_time_when_the_status_flips() -> None:
    first = set_condition([], r.READY, false(r.HEALTH_CHECK_FAILED, "a"), generation=1, now=T0)
    second = set_condition(first, r.READY, true(r.SERVING), generation=1, now=T1)
    c = find(second, r.READY)
    assert c is not None
    assert (c.status, c.last_transition_time) == ("True", T1)


def test_set_condition_keeps_one_condition_per_type_in_chain_order() -> None:
    conds = set_condition([], r.READY, true(r.SERVING), generation=1, now=T0)
    conds = set_condition(conds, r.CLASS_RESOLVED, true(r.RESOLVED), generation=1, now=T0)
    conds = set_condition(conds, r.READY, true(r.SERVING), generation=1, now=T1)
    assert [c.type for c in conds] == [r.CLASS_RESOLVED, r.READY]


def test_an_order_with_a_bad_class_does_not_also_report_a_model_error() -> None:
    chain = chain_conditions(
        {
            r.CLASS_RESOLVED: false(r.CLASS_NOT_FOUND, "no class"),
            r.MODEL_RESOLVED: false(r.MODEL_NOT_FOUND, "x"),
        }
    )
    assert chain[r.MODEL_RESOLVED].status == "Unknown"
    assert chain[r.PLANNED].status == "Unknown"
    assert chain[r.WORKLOAD_READY].status == "Unknown"
    assert (chain[r.READY].status, chain[r.READY].reason) == ("False", r.CLASS_NOT_FOUND)


def test_every_condition_is_set_from_the_first_reconcile_on() -> None:
    chain = chain_conditions({})
    assert set(chain) == set(r.ALL_CONDITIONS)
    assert all(v.status == "Unknown" for v in chain.values())


def test_ready_mirrors_an_unknown_earlier_condition_as_unknown() -> None:
    chain = chain_conditions(
        {r.CLASS_RESOLVED: true(r.RESOLVED), r.MODEL_RESOLVED: unknown(r.RECONCILING, "resolving")}
    )
    assert (chain[r.READY].status, chain[r.READY].reason) == ("Unknown", r.RECONCILING)


@pytest.mark.parametrize(
    ("name", "conditions", "phase"),
    [
        ("ready when Ready is True and scaling healthy", all_true(), "Ready"),
        (
            "ready when Ready is True and scaling unknown",
            all_true(**{r.SCALING_HEALTHY: ("Unknown", r.RECONCILING)}),
            "Ready",
        ),
        (
            "degraded when Ready is True and scale-up is blocked",
            all_true(**{r.SCALING_HEALTHY: ("False", r.SCALE_UP_BLOCKED)}),
            "Degraded",
        ),
        (
            "failed when the service turned unhealthy after Ready",
            all_true(**{r.READY: ("False", r.SERVICE_UNHEALTHY)}),
            "Failed",
        ),
        (
            "pending when the first probe failed",
            all_true(**{r.READY: ("False", r.HEALTH_CHECK_FAILED)}),
            "Pending",
        ),
        *[
            (
                f"failed on {reason}",
                all_true(**{type_: ("False", reason), r.READY: ("False", reason)}),
                "Failed",
            )
            for type_, reason in [
                (r.MODEL_RESOLVED, r.MODEL_NOT_FOUND),
                (r.MODEL_RESOLVED, r.MODEL_ACCESS_DENIED),
                (r.MODEL_RESOLVED, r.ENDPOINT_TYPE_POLICY_CONFLICT),
                (r.MODEL_RESOLVED, r.FORMAT_NOT_ALLOWED),
                (r.MODEL_RESOLVED, r.PARAMETER_COUNT_NOT_ALLOWED),
                (r.MODEL_RESOLVED, r.CATALOG_DISABLED),
                (r.PLANNED, r.QUANTIZATION_MISMATCH),
                (r.PLANNED, r.NO_COMPATIBLE_RUNTIME_AVAILABLE),
                (r.PLANNED, r.PLACEMENT_UNDECIDABLE),
            ]
        ],
        *[
            (
                f"pending on {reason}",
                all_true(**{type_: ("False", reason), r.READY: ("False", reason)}),
                "Pending",
            )
            for type_, reason in [
                (r.CLASS_RESOLVED, r.CLASS_NOT_FOUND),
                (r.CLASS_RESOLVED, r.CLASS_NOT_READY),
                (r.MODEL_RESOLVED, r.MODEL_NOT_READY),
                (r.MODEL_RESOLVED, r.AUTH_SECRET_NOT_FOUND),
                (r.MODEL_RESOLVED, r.MODEL_SOURCE_UNAVAILABLE),
                (r.PLANNED, r.NO_CAPACITY),
                (r.PLANNED, r.NO_ACCELERATOR_WITH_ENOUGH_MEMORY),
                (r.PLANNED, r.RESOURCE_CLAIM_EXHAUSTED),
                (r.WORKLOAD_READY, r.PROGRESSING),
                (r.WORKLOAD_READY, r.UNSCHEDULABLE),
                (r.WORKLOAD_READY, r.WORKLOAD_FAILED),
            ]
        ],
        (
            "ready while a replan failed and the plan in force serves",
            all_true(**{r.PLANNED: ("True", r.LAUNCH_PLAN_IN_FORCE)}),
            "Ready",
        ),
        ("pending before anything is known", [], "Pending"),
    ],
    ids=lambda x: x if isinstance(x, str) else "",
)
def test_phase_is_derived_from_the_conditions_alone(
    name: str, conditions: list[Condition], phase: str
) -> None:
    assert derive_phase(conditions) == phase, name
