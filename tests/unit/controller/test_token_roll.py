"""A new token rolls the runtime's pods (issue 21, item 10): the pod template carries a digest of
the order's token, so deleting ``<order>-auth`` (a new token is minted) changes the template and the
pods restart with the new ``VLLM_API_KEY``; the old token then dies with the old pods."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from controller import render
from controller.render.common import TOKEN_HASH_ANNOTATION
from shared import names
from tests.unit.controller.snapshots import (
    CLASSES,
    MIG,
    RECIPES,
    SETTINGS,
    TOKEN,
    first_passes,
    klass,
    plan_on,
    snap,
)

Obj = dict[str, Any]


def _templates(objs: list[Obj]) -> list[Obj]:
    out: list[Obj] = []
    for o in objs:
        if o["kind"] == "Deployment":
            out.append(o["spec"]["template"])
        elif o["kind"] == "LeaderWorkerSet":
            lwt = o["spec"]["leaderWorkerTemplate"]
            out += [lwt["leaderTemplate"], lwt["workerTemplate"]]
    return out


def _workload_templates(token: str | None) -> list[Obj]:
    s = snap(token=token, has_token=token is not None)
    _, _, second = first_passes(s)
    return _templates(list(second.apply))


def test_the_pod_template_carries_a_digest_of_the_token_never_the_token() -> None:
    (template,) = _workload_templates(TOKEN)
    digest = template["metadata"]["annotations"][TOKEN_HASH_ANNOTATION]
    assert digest == names.short_hash(TOKEN, 16)
    assert TOKEN not in str(template)


def test_a_new_token_changes_the_template_so_the_pods_roll() -> None:
    (old,) = _workload_templates(TOKEN)
    (new,) = _workload_templates("a-token-minted-after-the-secret-was-deleted")
    assert (
        old["metadata"]["annotations"][TOKEN_HASH_ANNOTATION]
        != new["metadata"]["annotations"][TOKEN_HASH_ANNOTATION]
    )
    assert old["spec"] == new["spec"], "only the digest differs: the key still comes from the Secret"


def test_no_workload_is_applied_before_the_token_exists() -> None:
    """The pass that mints the token waits for it, so the first pods never roll for the digest."""
    s = snap(token=None, has_token=False)
    first, _, second = first_passes(s)
    assert not first.apply and second.mint_token
    assert not _templates(list(second.apply))
    assert second.requeue is not None and second.requeue <= 1.0


def test_a_class_without_a_token_puts_no_digest_on_the_template() -> None:
    open_class = klass(
        spec={
            "placement": {"deviceClassNames": CLASSES, "sharingModes": ["Exclusive", "MIG"]},
            "exposure": {"authentication": "None"},
        }
    )
    s = snap(klass=open_class)
    assert not render.requires_token(open_class.spec)
    _, _, second = first_passes(replace(s))
    (template,) = _templates(list(second.apply))
    assert TOKEN_HASH_ANNOTATION not in template["metadata"]["annotations"]


def test_a_multi_node_group_puts_the_digest_on_leader_and_worker() -> None:
    s = snap()
    assert s.klass is not None
    plan = plan_on(MIG)
    objs = render.workload(
        s.order,
        plan.model_copy(update={"node_count": 2}),
        s.klass.spec,
        SETTINGS,
        revision="r",
        token_hash="abc",
    )
    templates = _templates(objs)
    assert len(templates) == 2
    assert all(t["metadata"]["annotations"][TOKEN_HASH_ANNOTATION] == "abc" for t in templates)
    assert RECIPES  # the recipes the snapshots plan with are loaded
