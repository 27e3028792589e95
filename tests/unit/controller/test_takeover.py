"""No takeover (issue 21, item 7; api.md section 6): a name the order writes that another object holds
stops the workload with WorkloadReady=False/NameConflict, and nothing is written."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from controller.live import takeover
from controller.planning import plan_decision
from shared import reasons as r
from tests.unit.controller.snapshots import (
    conditions_of,
    decide_and_build,
    first_passes,
    order_with,
    run_planner,
    snap,
)

Obj = dict[str, Any]
ORDER = order_with()


def holder(kind: str, name: str, *refs: Obj, annotations: dict[str, str] | None = None) -> Obj:
    return {
        "kind": kind,
        "metadata": {"name": name, "ownerReferences": list(refs), "annotations": annotations},
    }


def ref(
    kind: str = "InferenceService", name: str = "support-llm", uid: str = "u-1", controller: bool = True
) -> Obj:
    return {"kind": kind, "name": name, "uid": uid, "controller": controller}


@pytest.mark.parametrize(
    ("obj", "own"),
    [
        (holder("Service", "support-llm"), False),  # made by hand
        (holder("Service", "support-llm", ref("Deployment", "x", "d-1")), False),  # someone else's
        (holder("Service", "support-llm", ref()), True),  # the order's
        (holder("Service", "support-llm", ref(controller=False)), True),  # adopted by the order
        (holder("Service", "support-llm", ref(uid="u-0")), True),  # an earlier order of the name
        (holder("Service", "support-llm", ref(uid="u-0", name="other")), False),  # another order
        (holder("Service", "support-llm", ref(uid="u-0"), ref("ConfigMap", "c", "c-1", False)), False),
        (
            holder(
                "Secret",
                "support-llm-tls",
                annotations={takeover.CERT_MANAGER_CERTIFICATE: "support-llm-tls"},
            ),
            True,
        ),
        (
            holder("Secret", "support-llm-tls", annotations={takeover.CERT_MANAGER_CERTIFICATE: "other"}),
            False,
        ),
        (holder("Secret", "support-llm-tls"), False),
    ],
)
def test_what_is_the_orders_own(obj: Obj, own: bool) -> None:
    assert takeover.is_own(obj, ORDER, obj["kind"]) is own


def applied_after(s: Any) -> Any:
    """The second pass of a new order (the first one writes only Planned)."""
    return first_passes(s)[2]


@pytest.mark.parametrize(
    ("kind", "name"),
    [
        ("Service", "support-llm"),
        ("Deployment", "support-llm"),
        ("ScaledObject", "support-llm"),
        ("Certificate", "support-llm-tls"),
        ("Secret", "support-llm-tls"),
        ("Secret", "support-llm-auth"),
    ],
)
def test_a_name_held_by_another_object_is_a_name_conflict_and_nothing_is_written(
    kind: str, name: str
) -> None:
    held = {(kind, name): holder(kind, name)}
    s = snap(has_token=False, token=None)
    base = applied_after(s)
    assert base.mint_token and not base.apply  # the names read free: the token minted, the workload next
    assert applied_after(replace(s, has_token=True, token="t")).apply  # then applied
    # found by name (not labelled: not in the caches)
    free = {
        (k, n): None for _, k, n in [*takeover.names_to_judge(ORDER, [], token=True, live=lambda k, n: None)]
    }
    intents = applied_after(replace(s, held=_Held({**free, **held})))
    v = intents.verdicts[r.WORKLOAD_READY]
    assert (v.status, v.reason) == ("False", r.NAME_CONFLICT)
    assert f"{kind} `{name}`" in v.message and "not owned by this order" in v.message
    assert intents.apply == () and intents.delete == () and not intents.mint_token and intents.probe is None
    assert intents.requeue == takeover.RETRY_SECONDS
    # labelled (in the caches) but not the order's: the same
    labelled = applied_after(replace(s, owned=(holder(kind, name),)))
    assert labelled.verdicts[r.WORKLOAD_READY].reason == r.NAME_CONFLICT and labelled.apply == ()


def test_the_conflict_shows_on_ready_and_the_order_is_pending() -> None:
    s = snap(held=_Held({("Service", "support-llm"): holder("Service", "support-llm")}))
    first, st, _ = first_passes(s)
    after = replace(s, order=s.order.model_copy(update={"status": st}), plan_in_force=first.plan)
    _, st2 = decide_and_build(after, run_planner(after, plan_decision(after)))
    c = conditions_of(st2)
    assert c[r.WORKLOAD_READY] == ("False", r.NAME_CONFLICT)
    assert c[r.READY][0] == "False" and st2.phase == "Pending"


def test_names_not_read_yet_are_not_written_and_looked_at_again_soon() -> None:
    s = snap(held={})
    intents = applied_after(s)
    assert intents.apply == () and not intents.mint_token
    assert intents.verdicts[r.WORKLOAD_READY].reason != r.NAME_CONFLICT
    assert intents.requeue is not None and intents.requeue <= 1.0


def test_what_observe_reads_by_name() -> None:
    wanted = [("v1", "Service", "support-llm"), ("cert-manager.io/v1", "Certificate", "support-llm-tls")]
    judged = takeover.names_to_judge(ORDER, wanted, token=True, live=lambda k, n: None)
    assert [(k, n) for _, k, n in judged] == [
        ("Service", "support-llm"),
        ("Certificate", "support-llm-tls"),
        ("Secret", "support-llm-auth"),
        ("Secret", "support-llm-tls"),
    ]
    # the Certificate is the order's: cert-manager owns its Secret, which is not judged any more
    cert = holder("Certificate", "support-llm-tls", ref())
    live = {("Certificate", "support-llm-tls"): cert}
    judged = takeover.names_to_judge(ORDER, wanted, token=False, live=lambda k, n: live.get((k, n)))
    assert [(k, n) for _, k, n in judged] == [("Service", "support-llm"), ("Certificate", "support-llm-tls")]
    assert takeover.names_to_read(judged, lambda k, n: live.get((k, n))) == [("v1", "Service", "support-llm")]


class _Held(dict[tuple[str, str], Obj | None]):
    """What observe read: the names given, every other name free."""

    def __contains__(self, key: object) -> bool:
        return True

    def __getitem__(self, key: tuple[str, str]) -> Obj | None:
        return self.get(key)
