"""What the contract says about an object the API server stored, and what an answer means.

A stored object is refused by the contract when its pydantic model does not validate it, when the
webhook's validating function finds a problem in it, or (an order) when the mutating function
would still prune something from it. Pure.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pydantic import BaseModel, ValidationError

from controller.kube.errors import KubeError
from shared.api.inference_class import InferenceServiceClass
from shared.api.order import InferenceService
from shared.api.recipe import InferenceRecipe
from webhook.mutate_order import pruning
from webhook.validate_class import class_problems
from webhook.validate_order import order_problems
from webhook.validate_recipe import recipe_problems

CONTRACT: dict[str, tuple[type[BaseModel], Callable[[Mapping[str, Any]], list[str]]]] = {
    "InferenceService": (InferenceService, order_problems),
    "InferenceServiceClass": (InferenceServiceClass, class_problems),
    "InferenceRecipe": (InferenceRecipe, recipe_problems),
}
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
    model, problems_of = CONTRACT[kind]
    out: list[str] = []
    try:
        model.model_validate(stored)
    except ValidationError as e:
        out += [f"pydantic: {'.'.join(map(str, err['loc']))}: {err['msg']}" for err in e.errors()[:3]]
    out += [f"webhook: {p}" for p in problems_of(stored)]
    if kind == "InferenceService":
        patch, _ = pruning(stored)
        out += [f"mutating webhook would still prune {op['path']}" for op in patch]
    return out


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
