"""Writes and point reads on the API server, as plain dicts: server-side apply, create, get, list,
delete, the ``/status`` patch and Events. The reconciler's only way to change the world.

Kinds are named either by a ``Resource`` or by ``(apiVersion, kind)``; both go through the registry in
``controller.kube.client``. Errors are the typed ones of ``controller.kube.errors``, re-exported here.
"""

from __future__ import annotations

import secrets
from datetime import UTC, datetime
from typing import Any

from controller.kube.client import ApiClient, Resource, path_for, request, resource_for
from controller.kube.errors import (
    AlreadyExists,
    ApiUnavailable,
    Conflict,
    Forbidden,
    Gone,
    Invalid,
    KubeError,
    NotFound,
)

__all__ = [
    "AlreadyExists",
    "ApiUnavailable",
    "Conflict",
    "Forbidden",
    "Gone",
    "Invalid",
    "KubeError",
    "NotFound",
    "apply",
    "create",
    "create_event",
    "delete",
    "evict",
    "get",
    "list_objects",
    "patch_status",
]

Obj = dict[str, Any]
APPLY_PATCH = "application/apply-patch+yaml"
MERGE_PATCH = "application/merge-patch+json"


def _target(target: Resource | str, kind: str | None) -> Resource:
    if isinstance(target, Resource):
        return target
    if kind is None:
        raise TypeError("name the kind: (resource) or (apiVersion, kind)")
    return resource_for(target, kind)


def _of(obj: Obj) -> tuple[Resource, str | None, str]:
    meta = obj.get("metadata") or {}
    if not meta.get("name"):
        raise ValueError(f"{obj.get('kind')} has no metadata.name")
    resource = resource_for(obj["apiVersion"], obj["kind"])
    return resource, (meta.get("namespace") if resource.namespaced else None), meta["name"]


def apply(
    api_client: ApiClient, obj: Obj, *, field_manager: str, force: bool = True, dry_run: bool = False
) -> Obj:
    """Server-side apply ``obj`` (the fields this manager owns) and return the object as stored.

    Applying the same object twice is a no-op on the server: the resourceVersion does not change."""
    resource, namespace, name = _of(obj)
    query: dict[str, str | int | bool] = {"fieldManager": field_manager}
    if force:
        query["force"] = True
    if dry_run:
        query["dryRun"] = "All"
    return request(
        api_client,
        "PATCH",
        path_for(resource, namespace=namespace, name=name),
        query=query,
        body=obj,
        content_type=APPLY_PATCH,
    )


def create(api_client: ApiClient, obj: Obj, *, field_manager: str | None = None) -> Obj:
    """Create ``obj``; ``AlreadyExists`` when its name is taken."""
    resource, namespace, _ = _of(obj)
    query: dict[str, str | int | bool] = {"fieldManager": field_manager} if field_manager else {}
    return request(api_client, "POST", path_for(resource, namespace=namespace), query=query, body=obj)


def get(
    api_client: ApiClient,
    target: Resource | str,
    kind: str | None = None,
    *,
    namespace: str | None,
    name: str,
) -> Obj | None:
    """The object, read from the API server (not a cache); ``None`` when it does not exist."""
    resource = _target(target, kind)
    try:
        return request(api_client, "GET", path_for(resource, namespace=namespace, name=name))
    except NotFound:
        return None


def list_objects(
    api_client: ApiClient,
    target: Resource | str,
    kind: str | None = None,
    *,
    namespace: str | None = None,
    label_selector: str | None = None,
) -> list[Obj]:
    """Every object of a kind (in ``namespace``, or everywhere), read page by page."""
    resource = _target(target, kind)
    out: list[Obj] = []
    query: dict[str, str | int | bool] = {"limit": 500}
    if label_selector:
        query["labelSelector"] = label_selector
    while True:
        page = request(api_client, "GET", path_for(resource, namespace=namespace), query=query)
        out.extend(page.get("items") or [])
        cont = (page.get("metadata") or {}).get("continue")
        if not cont:
            return out
        query["continue"] = cont


def delete(
    api_client: ApiClient,
    target: Resource | str,
    kind: str | None = None,
    *,
    namespace: str | None,
    name: str,
    propagation: str = "Background",
) -> bool:
    """Delete an object; ``False`` when it was already gone."""
    resource = _target(target, kind)
    body: Obj = {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": propagation}
    try:
        request(api_client, "DELETE", path_for(resource, namespace=namespace, name=name), body=body)
    except NotFound:
        return False
    return True


def patch_status(
    api_client: ApiClient,
    target: Resource | str,
    kind: str | None = None,
    *,
    namespace: str | None,
    name: str,
    status: Obj,
    resource_version: str | None,
) -> Obj:
    """Merge-patch the ``/status`` subresource with ``status``.

    With ``resource_version`` the write is conditional: a stale version raises ``Conflict`` (re-read,
    recompute, retry). Merge-patch semantics: lists (conditions) are replaced whole, keys absent from
    ``status`` are kept (another writer's fields survive), and a key set to ``None`` is removed."""
    body: Obj = {"status": status}
    if resource_version is not None:
        body["metadata"] = {"resourceVersion": resource_version}
    return merge_patch(
        api_client, target, kind, namespace=namespace, name=name, body=body, subresource="status"
    )


def merge_patch(
    api_client: ApiClient,
    target: Resource | str,
    kind: str | None = None,
    *,
    namespace: str | None,
    name: str,
    body: Obj,
    subresource: str | None = None,
) -> Obj:
    """JSON merge-patch (RFC 7386) an object: lists in ``body`` replace the stored ones whole; a
    ``metadata.resourceVersion`` in ``body`` makes the write conditional (``Conflict`` when stale)."""
    resource = _target(target, kind)
    return request(
        api_client,
        "PATCH",
        path_for(resource, namespace=namespace, name=name, subresource=subresource),
        body=body,
        content_type=MERGE_PATCH,
    )


def create_event(
    api_client: ApiClient,
    regarding: Obj,
    *,
    type_: str,
    reason: str,
    message: str,
    reporting_controller: str,
    action: str,
    reporting_instance: str | None = None,
    now: datetime | None = None,
) -> Obj:
    """Record an ``events.k8s.io/v1`` Event about ``regarding`` (``kubectl describe`` lists it, and
    ``kubectl get events`` too). Cluster-scoped objects get their Events in ``default``."""
    if type_ not in ("Normal", "Warning"):
        raise ValueError(f"event type must be Normal or Warning, not {type_!r}")
    meta = regarding.get("metadata") or {}
    namespace = meta.get("namespace") or "default"
    stamp = (now or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    ref = {
        "apiVersion": regarding.get("apiVersion"),
        "kind": regarding.get("kind"),
        "name": meta.get("name"),
        "uid": meta.get("uid"),
        "resourceVersion": meta.get("resourceVersion"),
    }
    if meta.get("namespace"):
        ref["namespace"] = meta["namespace"]
    event = {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": f"{meta.get('name')}.{secrets.token_hex(8)}", "namespace": namespace},
        "eventTime": stamp,
        "type": type_,
        "reason": reason,
        "note": message[:1024],
        "action": action,
        "reportingController": reporting_controller,
        "reportingInstance": reporting_instance or reporting_controller,
        "regarding": {k: v for k, v in ref.items() if v is not None},
    }
    return request(
        api_client,
        "POST",
        path_for(resource_for("events.k8s.io/v1", "Event"), namespace=namespace),
        body=event,
    )


def evict(api_client: ApiClient, *, namespace: str, name: str) -> None:
    """Evict a pod through the Eviction API (``policy/v1`` Eviction on ``pods/eviction``), which
    honours its PodDisruptionBudgets: a budget that allows no disruption answers 429
    (``ApiUnavailable``: try again later); ``NotFound`` when the pod is gone."""
    body: Obj = {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": name, "namespace": namespace},
    }
    pods = resource_for("v1", "Pod")
    request(
        api_client, "POST", path_for(pods, namespace=namespace, name=name, subresource="eviction"), body=body
    )
