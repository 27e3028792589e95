"""What every rendered object shares: its metadata (name, labels, the order's ownerReference) and the
view of a launch plan the renderer reads. Pure."""

from __future__ import annotations

from typing import Any, Protocol

from shared import names
from shared.api.base import GROUP_VERSION
from shared.api.order import InferenceService

Obj = dict[str, Any]
PLAN_ANNOTATION = "ai.deckhouse.io/launch-plan"
# On the pod template: a digest of the order's token. A new token (``<order>-auth`` deleted and
# minted again) changes the template, so the pods roll and pick the new ``VLLM_API_KEY`` up; a pod
# keeps the environment it started with, so without this the old token would go on working.
TOKEN_HASH_ANNOTATION = "ai.deckhouse.io/token-hash"


def template_annotations(plan_hash: str, token_hash: str | None) -> dict[str, str]:
    """The runtime pod template's annotations: the plan's digest, and the token's when it has one."""
    out = {"ai.deckhouse.io/plan-hash": plan_hash}
    if token_hash is not None:
        out[TOKEN_HASH_ANNOTATION] = token_hash
    return out


class PlanView(Protocol):
    """What the renderer reads of a launch plan (controller.planner.LaunchPlan satisfies it)."""

    @property
    def device_class(self) -> str: ...
    @property
    def device_selectors(self) -> list[str]: ...
    @property
    def accelerator_count(self) -> int: ...
    @property
    def node_count(self) -> int: ...
    @property
    def devices_per_pod(self) -> int: ...
    @property
    def capacity_requests(self) -> dict[str, str] | None: ...
    @property
    def sharing_mode(self) -> str: ...
    @property
    def share_percent(self) -> int: ...
    @property
    def image(self) -> str: ...
    @property
    def args(self) -> list[str]: ...
    @property
    def cpu(self) -> str: ...
    @property
    def memory(self) -> str: ...
    @property
    def model_volume(self) -> str: ...
    def model_dump_json(self) -> str: ...


def owner_reference(order: InferenceService) -> Obj:
    return {
        "apiVersion": GROUP_VERSION,
        "kind": "InferenceService",
        "name": order.metadata.name,
        "uid": order.metadata.uid or "",
        "controller": True,
        "blockOwnerDeletion": True,
    }


def labels(order: InferenceService) -> dict[str, str]:
    return {
        names.LABEL_ORDER: order.metadata.name,
        names.LABEL_MANAGED_BY: names.MANAGED_BY,
        "app.kubernetes.io/name": "inference",
        "app.kubernetes.io/instance": order.metadata.name,
    }


def meta(order: InferenceService, name: str, *, annotations: dict[str, str] | None = None) -> Obj:
    """Metadata of an owned object: in the order's namespace, labelled, owned by the order."""
    out: Obj = {
        "name": name,
        "namespace": order.metadata.namespace,
        "labels": labels(order),
        "ownerReferences": [owner_reference(order)],
    }
    if annotations:
        out["annotations"] = annotations
    return out
