"""What a ResourceClaim asks for (``ClaimShape``), read the same way from a claim and from the claim
template a plan renders. Pure.

The resource claim controller copies a ResourceClaimTemplate's ``spec.spec`` into every claim it
generates, and the template's name is a digest of that spec (``render.claim_template_name``): within
one order, two claims came from the same template (leader or workers) exactly when they ask for the
same thing. A claim does not carry its template's name, so the ledger compares shapes instead: the
shape of a reservation's plan (``render.claim_devices``) and the shape of each claim of its order.

The API server may write a request back otherwise than it was sent (field order, a quantity in its
canonical form, the defaults of ``allocationMode`` and ``count``), so a shape holds the request's
meaning, not its text.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from shared.quantity import QuantityError, parse_quantity

Obj = Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Request:
    name: str
    device_class: str
    mode: str
    count: int
    selectors: tuple[str, ...]
    capacity: tuple[tuple[str, Decimal | str], ...]


@dataclass(frozen=True, slots=True)
class ClaimShape:
    requests: tuple[Request, ...]
    config: str  # the claim's ``config``, as canonical JSON


def shape_of(devices: Obj | None) -> ClaimShape | None:
    """The shape of a claim's (or a claim template's) ``spec.devices``; None when it asks for nothing."""
    requests = (devices or {}).get("requests") or []
    if not requests:
        return None
    out = []
    for r in requests:
        exactly = r.get("exactly") or {}
        capacity = (exactly.get("capacity") or {}).get("requests") or {}
        out.append(
            Request(
                name=str(r.get("name", "")),
                device_class=str(exactly.get("deviceClassName", "")),
                mode=str(exactly.get("allocationMode") or "ExactCount"),
                count=int(exactly.get("count") or 1),
                selectors=tuple(
                    str((s.get("cel") or {}).get("expression", "")) for s in exactly.get("selectors") or []
                ),
                capacity=tuple(sorted((str(k), _amount(v)) for k, v in capacity.items())),
            )
        )
    config = json.dumps((devices or {}).get("config") or [], sort_keys=True)
    return ClaimShape(tuple(out), config)


def _amount(value: Any) -> Decimal | str:
    try:
        return parse_quantity(value)
    except (QuantityError, TypeError):
        return str(value)
