"""Drift: has someone changed, in a live owned object, a field the controller sets? Pure.

The applied-hash annotation says what the controller last applied; it cannot see a later
``kubectl edit`` of the Deployment or Service. This compares what the controller would apply
with what is stored, as a subset: every value the desired object sets must be in the live
object, while fields the API server defaults (``imagePullPolicy``, ``clusterIP``...) and fields
other managers add (``kubectl rollout restart``'s annotation, appended list items) are not
drift. Quantities compare by value, since the server may store ``1000m`` as ``1``.

Only kinds whose spec may change after creation are compared: a PVC or a ResourceClaimTemplate
cannot be edited in place, so their hash annotation is enough. A group's NetworkPolicy is compared
(an edit that narrows or drops a rule is restored); a rule appended to it is not drift, and cannot
be: NetworkPolicies add up, so the namespace's own editors can always open their own pods with a
policy of theirs. The policy fences off other namespaces, not the order's own.
"""

from __future__ import annotations

import json
from typing import Any

from shared.quantity import QuantityError, parse_quantity

Obj = dict[str, Any]

CHECKED_KINDS = frozenset(
    {"Deployment", "LeaderWorkerSet", "Service", "ScaledObject", "Ingress", "NetworkPolicy"}
)


def stable_json(obj: Obj) -> str:
    """The object as canonical JSON: what the applied-hash annotation is a digest of."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))


def drifted(desired: Obj, live: Obj) -> str | None:
    """The first path where ``live`` no longer carries what ``desired`` sets, or None.

    The spec and the labels are compared; the annotations other than our own are the user's.
    """
    if desired.get("kind") not in CHECKED_KINDS:
        return None
    labels = (desired.get("metadata") or {}).get("labels") or {}
    path = _missing(labels, (live.get("metadata") or {}).get("labels") or {}, "metadata.labels")
    if path is not None:
        return path
    return _missing(desired.get("spec") or {}, live.get("spec") or {}, "spec")


def _missing(want: Any, have: Any, path: str) -> str | None:
    if isinstance(want, dict):
        if not isinstance(have, dict):
            return path
        for key, value in want.items():
            if key not in have:
                if value is None or value == {} or value == []:
                    continue  # nothing set: the server may drop an empty field
                return f"{path}.{key}"
            found = _missing(value, have[key], f"{path}.{key}")
            if found is not None:
                return found
        return None
    if isinstance(want, list):
        if not isinstance(have, list) or len(have) < len(want):
            return path
        for i, item in enumerate(want):
            found = _missing(item, have[i], f"{path}[{i}]")
            if found is not None:
                return found
        return None
    return None if _same_scalar(want, have) else path


def _same_scalar(want: Any, have: Any) -> bool:
    if want == have and type(want) is type(have):
        return True
    if isinstance(want, str) and isinstance(have, str):
        try:
            return parse_quantity(want) == parse_quantity(have)
        except QuantityError:
            return False
    return False
