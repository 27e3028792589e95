"""The order's Deployment and its model volume. Pure.

**Rollout strategy** follows the model volume's access mode (module setting
``modelVolumeAccessMode``). A ReadWriteOnce (or ReadWriteOncePod) volume attaches to one node at a
time, so a new pod on another node could not mount it while the old one runs: the Deployment uses
Recreate. A ReadWriteMany volume lets the new pod start beside the old one: RollingUpdate with no
pod taken down before its successor is Ready (``maxUnavailable: 0``).
"""

from __future__ import annotations

from controller.config.settings import Settings
from controller.render import timing
from controller.render.common import PLAN_ANNOTATION, Obj, PlanView, labels, meta, template_annotations
from controller.render.exposure import requires_token
from controller.render.fetch import FetchSpec
from controller.render.pod import pod_spec
from shared import names
from shared.api.inference_class import InferenceServiceClassSpec
from shared.api.order import InferenceService
from shared.quantity import parse_bytes


def model_volume_name(
    order: InferenceService, plan: PlanView, revision: str | None, fetch: FetchSpec | None = None
) -> str:
    """``<order>-model-<hash>``: a new model, source or size gets a new volume. Volumes cannot shrink
    and most cannot grow, and a new model needs its weights fetched afresh anyway; the old volume is
    deleted once the Deployment no longer mounts it."""
    source = fetch.repo if fetch is not None else order.spec.model.ref.name
    key = f"{order.spec.model.src}:{source}@{revision or ''}:{plan.model_volume}"
    return f"{names.model_volume(order.metadata.name)}-{names.short_hash(key)}"


def model_volume(
    order: InferenceService,
    plan: PlanView,
    settings: Settings,
    *,
    revision: str | None = None,
    fetch: FetchSpec | None = None,
) -> Obj:
    spec: Obj = {
        "accessModes": [settings.model_volume_access_mode],
        "resources": {"requests": {"storage": plan.model_volume}},
    }
    if settings.model_storage_class:
        spec["storageClassName"] = settings.model_storage_class
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": meta(order, model_volume_name(order, plan, revision, fetch)),
        "spec": spec,
    }


def keep_volume_fields(desired: Obj, live: Obj | None) -> Obj:
    """The model volume to apply, keeping what the stored claim already has of the fields the API
    server never lets change (storage class, access modes): the module settings
    ``modelStorageClass`` and ``modelVolumeAccessMode`` apply to new volumes, and an existing
    volume is not refused, nor replaced, when an administrator changes them."""
    if live is None:
        return desired
    spec = dict(desired["spec"])
    stored = live.get("spec") or {}
    for field in ("storageClassName", "accessModes"):
        if field in stored:
            spec[field] = stored[field]
        else:
            spec.pop(field, None)
    return {**desired, "spec": spec}


def strategy(settings: Settings) -> Obj:
    if settings.model_volume_access_mode == "ReadWriteMany":
        return {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 1}}
    return {"type": "Recreate"}


def deployment(
    order: InferenceService,
    plan: PlanView,
    spec: InferenceServiceClassSpec,
    settings: Settings,
    *,
    revision: str | None,
    fetch: FetchSpec | None = None,
    token_hash: str | None = None,
) -> Obj:
    """The workload. ``replicas`` is left to the HPA (an applied value would fight it)."""
    name = order.metadata.name
    plan_json = plan.model_dump_json()
    pod = pod_spec(
        order,
        plan,
        spec,
        settings,
        volume_name=model_volume_name(order, plan, revision, fetch),
        revision=revision,
        token=requires_token(spec),
        fetch=fetch,
    )
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": meta(order, names.workload(name), annotations={PLAN_ANNOTATION: plan_json}),
        "spec": {
            "selector": {"matchLabels": {names.LABEL_ORDER: name}},
            "strategy": strategy(settings),
            "progressDeadlineSeconds": timing.progress_deadline_seconds(
                parse_bytes(plan.model_volume), settings
            ),
            "template": {
                "metadata": {
                    "labels": labels(order),
                    "annotations": template_annotations(names.short_hash(plan_json, 16), token_hash),
                },
                "spec": pod,
            },
        },
    }
