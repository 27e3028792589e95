"""Whose token is in the ``<order>-auth`` Secret. Pure.

The Secret is named after the order, so an order deleted and created again under the same name
(a new uid) can meet the Secret of its previous incarnation: the garbage collector deletes it only
once it notices the old owner is gone, which takes seconds, or minutes while the API server or
kube-controller-manager restarts. Serving with that token would rotate it under the user's feet
when the collector catches up. So the token counts only when the Secret is controlled by this
order's uid; a Secret controlled by another uid is stale: the controller takes it over with a
new token and this order as its owner (a merge patch conditional on the stale Secret's
resourceVersion; its ClusterRole has no ``delete`` on Secrets).
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

from shared import names

Obj = dict[str, Any]


@dataclass(frozen=True, slots=True)
class AuthReading:
    token: str | None  # the order's own token, when its Secret holds one
    stale_version: str | None = None  # resourceVersion of a Secret of the name another owner controls


def read_auth(secret: Obj | None, order_uid: str | None) -> AuthReading:
    """The order's token from its ``<order>-auth`` Secret (see the module doc)."""
    if secret is None:
        return AuthReading(None)
    meta = secret.get("metadata") or {}
    controller = next((o for o in meta.get("ownerReferences") or [] if o.get("controller")), None)
    if order_uid and (controller is None or controller.get("uid") != order_uid):
        return AuthReading(None, stale_version=str(meta.get("resourceVersion") or ""))
    token_b64 = (secret.get("data") or {}).get(names.AUTH_TOKEN_KEY)
    return AuthReading(base64.b64decode(token_b64).decode() if token_b64 else None)
