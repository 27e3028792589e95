"""Event mapping: which orders an event on some object affects. Pure.

- an order event maps to itself; a class event to every order of that class (and the class itself);
- a recipe or DeviceClass event to every class and every order (recipes and device classes are few);
- a Secret event to the orders that name it in ``authSecretRef`` and to the order owning ``<order>-auth``;
- an owned object (Deployment, Pod, HPA ...) to the order in its label;
- an inventory event (ResourceSlice, ResourceClaim) to the orders waiting for capacity: those not Ready;
- a catalog Model/ClusterModel event to the orders that reference it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from shared import names
from shared import reasons as r

Obj = dict[str, Any]
Key = tuple[str, str, str]  # ("order", namespace, name) | ("class", "", name)


def order_key(obj: Obj) -> Key:
    return ("order", obj["metadata"].get("namespace", ""), obj["metadata"]["name"])


def _spec(order: Obj) -> Obj:
    spec = order.get("spec")
    return spec if isinstance(spec, dict) else {}


def _ready(order: Obj) -> bool:
    for c in (order.get("status") or {}).get("conditions") or []:
        if c.get("type") == r.READY:
            return bool(c.get("status") == "True")
    return False


def keys_for(cache: str, obj: Obj, orders: Iterable[Obj]) -> list[Key]:
    """The reconcile keys an event on ``obj`` in ``cache`` maps to."""
    meta = obj.get("metadata", {})
    name, ns = meta.get("name", ""), meta.get("namespace", "")
    if cache == "orders":
        return [order_key(obj)]
    if cache == "classes":
        return [("class", "", name)] + [
            order_key(o) for o in orders if _spec(o).get("inferenceServiceClassName") == name
        ]
    if cache in ("recipes", "deviceclasses"):
        return [order_key(o) for o in orders]
    if cache == "secrets":
        out: list[Key] = []
        for o in orders:
            if o["metadata"].get("namespace") != ns:
                continue
            ref = (_spec(o).get("model") or {}).get("authSecretRef") or {}
            if ref.get("name") == name or names.auth_secret(o["metadata"]["name"]) == name:
                out.append(order_key(o))
        return out
    if cache in ("resourceslices", "resourceclaims"):
        return [order_key(o) for o in orders if not _ready(o)]
    if cache in ("models", "clustermodels"):
        out = []
        for o in orders:
            model = _spec(o).get("model") or {}
            ref = model.get("ref") or {}
            if model.get("src") != "Catalog" or ref.get("name") != name:
                continue
            kind = ref.get("kind") or "ClusterModel"
            if (cache == "clustermodels" and kind == "ClusterModel") or (
                cache == "models" and kind == "Model" and o["metadata"].get("namespace") == ns
            ):
                out.append(order_key(o))
        return out
    owner = (meta.get("labels") or {}).get(names.LABEL_ORDER)
    if owner:
        return [("order", ns, owner)]
    return []


def class_keys(classes: Iterable[Obj]) -> list[Key]:
    return [("class", "", c["metadata"]["name"]) for c in classes]
