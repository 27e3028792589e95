"""What the contract says about an object the API server stored, and what an answer means. Pure.

The contract is ``bench.fuzz.contract``: the CRD schemas of ``deploy/crds`` and the refusals the
documents promise, read independently of the webhook's and the API models' code, so a webhook that
lets through what the contract forbids shows as a refusal here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bench.fuzz.contract import refusals
from controller.kube.errors import KubeError

OUTCOMES = (
    "accepted",
    "refused_by_schema",
    "refused_by_webhook",
    "webhook_internal_error",
    "webhook_unreachable_or_5xx",
    "api_unavailable",
    "other",
)


def contract_refusals(kind: str, stored: Mapping[str, Any]) -> list[str]:
    """Why the contract refuses ``stored``; empty when it accepts it."""
    return refusals(kind, stored)


def outcome_of(error: Exception) -> str:
    """The outcome of a refused write, from the API server's answer."""
    message = str(error)
    status = error.status if isinstance(error, KubeError) else 0
    if "failed calling webhook" in message:
        return "webhook_unreachable_or_5xx"
    if "admission webhook" in message and "denied the request" in message:
        return "webhook_internal_error" if "internal error" in message else "refused_by_webhook"
    if status == 0 or status >= 500 or status == 429:
        return "api_unavailable"
    if status in (400, 422):
        return "refused_by_schema"
    return "other"
