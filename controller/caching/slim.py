"""What the informers keep of each watched object: client-go's informer transform. Pure.

The informer applies the kind's transform (``kinds.WatchedKind.transform``) to every object before
caching it and before the event handler sees it, so handlers and cache readers get the same copy.

Every transform drops ``metadata.managedFields`` (no reader uses them; they were about half of
the cached bytes) and interns every string, keys and values: the same keys, label values,
images and the model fetcher's inline script are then held once rather than once per object.
Kinds with large parts no reader uses keep only the parts read:

- a Pod keeps its metadata, ``spec.resourceClaims`` and the status fields read by
  ``controller.live.workload``, ``controller.live.group_status`` and ``controller.live.progress``;
- a ResourceClaim keeps its metadata, ``spec.devices`` (what it asks for: the ledger's
  ``shapes.shape_of`` tells the claims of a plan by it) and ``status.allocation`` (the ledger's
  ``claim_use``, ``observe._allocated``) and ``status.reservedFor`` (the pods to evict when an order
  of higher priority preempts it);
- a Secret keeps only what ``controller.live.auth_token`` and ``controller.live.takeover`` read: its
  identity, a few ownerReferences, the order label, cert-manager's certificate-name annotation,
  and the token of an ``<order>-auth`` Secret when it is token-sized. Any namespace member can
  label a Secret with an order: a 1 MiB Secret so labelled costs the cache well under a KiB
  instead of its whole data (docs/admin-guide.md, "Tenant isolation").
- a Namespace keeps its name, uid, resourceVersion and labels (``controller.conditions.class_access`` reads the
  labels against a class's ``namespaceSelector``), not its annotations, spec or status.

Every other kind keeps its whole body: drift compares the live spec of owned workloads, the
ledger parses the whole spec of a ResourceSlice or DeviceClass from the handler's copy.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from shared import names

Obj = dict[str, Any]
Transform = Callable[[Obj], Obj]

# What the readers of a cached Pod's status use (readings, group_status, progress, own_claim_names).
POD_STATUS = ("phase", "conditions", "podIP", "initContainerStatuses", "resourceClaimStatuses")


def interned(value: Any) -> Any:
    """A copy of decoded JSON with every string, key or value, interned."""
    if isinstance(value, str):
        return sys.intern(value)
    if isinstance(value, dict):
        return {sys.intern(k): interned(v) for k, v in value.items()}
    if isinstance(value, list):
        return [interned(v) for v in value]
    return value


def _interned_obj(obj: Obj) -> Obj:
    return {sys.intern(k): interned(v) for k, v in obj.items()}


def _metadata(obj: Obj) -> Obj:
    meta = obj.get("metadata") or {}
    return {k: v for k, v in meta.items() if k != "managedFields"}


def whole(obj: Obj) -> Obj:
    """Everything but ``metadata.managedFields``."""
    return _interned_obj({**obj, "metadata": _metadata(obj)})


def pod(obj: Obj) -> Obj:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    out: Obj = {"apiVersion": obj.get("apiVersion"), "kind": obj.get("kind"), "metadata": _metadata(obj)}
    if "resourceClaims" in spec:
        out["spec"] = {"resourceClaims": spec["resourceClaims"]}
    out["status"] = {k: status[k] for k in POD_STATUS if k in status}
    return _interned_obj(out)


def resource_claim(obj: Obj) -> Obj:
    status = obj.get("status") or {}
    out: Obj = {"apiVersion": obj.get("apiVersion"), "kind": obj.get("kind"), "metadata": _metadata(obj)}
    devices = (obj.get("spec") or {}).get("devices")
    if devices is not None:
        out["spec"] = {"devices": devices}
    out["status"] = {k: status[k] for k in ("allocation", "reservedFor") if k in status}
    return _interned_obj(out)


SECRET_META = ("name", "namespace", "uid", "resourceVersion", "creationTimestamp", "deletionTimestamp")
SECRET_ANNOTATIONS = ("cert-manager.io/certificate-name",)  # controller.live.takeover
SECRET_OWNERS = 8  # more are kept as the first ones: enough for every reader's judgement
TOKEN_LIMIT = 512  # bytes of base64: a minted token is 43 characters


def secret(obj: Obj) -> Obj:
    meta = obj.get("metadata") or {}
    out_meta: Obj = {k: meta[k] for k in SECRET_META if k in meta}
    refs = meta.get("ownerReferences") or []
    if refs:
        out_meta["ownerReferences"] = refs[:SECRET_OWNERS]
        if len(refs) > SECRET_OWNERS:  # judged as more than one owner, as it has
            out_meta["ownerReferences"].append({"kind": "", "name": "", "uid": "(more)"})
    label = (meta.get("labels") or {}).get(names.LABEL_ORDER)
    if label is not None:
        out_meta["labels"] = {names.LABEL_ORDER: label}
    annotations = {k: v for k, v in (meta.get("annotations") or {}).items() if k in SECRET_ANNOTATIONS}
    if annotations:
        out_meta["annotations"] = annotations
    out: Obj = {"apiVersion": obj.get("apiVersion"), "kind": obj.get("kind"), "metadata": out_meta}
    token = (obj.get("data") or {}).get(names.AUTH_TOKEN_KEY)
    name = str(meta.get("name") or "")
    if name.endswith(names.auth_secret("")) and isinstance(token, str) and len(token) <= TOKEN_LIMIT:
        out["data"] = {names.AUTH_TOKEN_KEY: token}
    return _interned_obj(out)


def namespace(obj: Obj) -> Obj:
    meta = obj.get("metadata") or {}
    kept = {k: meta[k] for k in ("name", "uid", "resourceVersion", "labels") if k in meta}
    return _interned_obj({"apiVersion": obj.get("apiVersion"), "kind": obj.get("kind"), "metadata": kept})
