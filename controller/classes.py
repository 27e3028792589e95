"""The class's own status: Ready when its recipes, device classes and selector hold; unreadable
ResourceSlices are reported on it (skipped by the planner, never fatal for the fleet)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

from pydantic import ValidationError

from controller.conditions import class_access, resolve
from controller.kinds import Cache
from controller.kube import apply as kapi
from shared import reasons as r
from shared.api.inference_class import InferenceServiceClass
from shared.cel import selector_error
from shared.conditions import set_condition

if TYPE_CHECKING:
    from controller.act import Actor
    from controller.observe import Observer


def class_status(observer: Observer, actor: Actor, name: str, now: float) -> float | None:
    store = observer.store
    raw = store.get(Cache.CLASSES, None, name)
    if raw is None:
        return None
    try:
        klass = InferenceServiceClass.model_validate(raw)
    except ValidationError:
        return None
    spec = klass.spec
    v = resolve.class_readiness(
        spec,
        recipe_names=[x["metadata"]["name"] for x in store.list(Cache.RECIPES)],
        device_class_names=[x["metadata"]["name"] for x in store.list(Cache.DEVICE_CLASSES)],
        selector_error=selector_error(spec.placement.selector) if spec.placement.selector else None,
        namespace_selector_error=class_access.selector_problem(raw),
    )
    unreadable = observer.ledger.unreadable()
    if v.ok and unreadable:
        first = sorted(unreadable.items())[0]
        v = type(v)(
            v.status,
            v.reason,
            f"{v.message} {len(unreadable)} ResourceSlice(s) cannot be read and are skipped; "
            f"first: {first[1]}".strip(),
        )
    stamp = datetime.fromtimestamp(now, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    old = klass.status
    conditions = set_condition(old.conditions, r.READY, v, generation=klass.metadata.generation, now=stamp)
    new = old.model_copy(update={"conditions": conditions, "observed_generation": klass.metadata.generation})
    if new.to_wire() == old.to_wire():
        return None
    kapi.patch_status(
        actor.api,
        "ai.deckhouse.io/v1alpha1",
        "InferenceServiceClass",
        namespace=None,
        name=name,
        status=new.to_wire(),
        resource_version=raw["metadata"]["resourceVersion"],
    )
    return None
