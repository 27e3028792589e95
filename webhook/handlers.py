"""The admission handlers: one pure ``review -> response`` function per webhook path.

``handle(route, review)`` is the single entry the app calls. It checks that the request is of the
kind and operation the path expects, allows DELETE and writes to subresources, runs the route's
decision on CREATE and UPDATE, and turns any bug in a decision into a refusal carrying the uid.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from shared.api.base import API_GROUP, API_VERSION
from webhook.mutate_order import pruning
from webhook.review import Response, Review, allow, deny, refuse_internal, request_of
from webhook.validate_class import class_problems
from webhook.validate_order import order_name_problems, order_problems
from webhook.validate_recipe import recipe_problems

Decision = Callable[[Review, Mapping[str, Any]], Response]
WRITES = ("CREATE", "UPDATE")


def _validating(problems_of: Callable[[Mapping[str, Any]], list[str]]) -> Decision:
    def decide(review: Review, obj: Mapping[str, Any]) -> Response:
        problems = problems_of(obj)
        return deny(review, problems) if problems else allow(review)

    return decide


def _validate_order(review: Review, obj: Mapping[str, Any]) -> Response:
    """The order's fields, and on CREATE its name (names are immutable: UPDATE never checks it)."""
    problems = order_problems(obj)
    if request_of(review).get("operation") == "CREATE":
        problems = order_name_problems(obj) + problems
    return deny(review, problems) if problems else allow(review)


def _mutate_order(review: Review, obj: Mapping[str, Any]) -> Response:
    patch, warnings = pruning(obj)
    return allow(review, warnings=warnings, patch=patch)


@dataclass(frozen=True)
class Route:
    """A webhook path: the kind it admits and what it decides on CREATE and UPDATE."""

    path: str
    kind: str
    resource: str
    decide: Decision
    mutating: bool = False


ROUTES: tuple[Route, ...] = (
    Route("/mutate-inferenceservice", "InferenceService", "inferenceservices", _mutate_order, mutating=True),
    Route("/validate-inferenceservice", "InferenceService", "inferenceservices", _validate_order),
    Route(
        "/validate-inferenceserviceclass",
        "InferenceServiceClass",
        "inferenceserviceclasses",
        _validating(class_problems),
    ),
    Route("/validate-inferencerecipe", "InferenceRecipe", "inferencerecipes", _validating(recipe_problems)),
)


def handle(route: Route, review: Review) -> Response:
    """The response to a parsed review (``review.parse_review``) on ``route``. Never raises."""
    try:
        return _handle(route, review)
    except Exception as error:  # a bug must refuse the write with a clear message, never become a 500
        return refuse_internal(review, error)


def _handle(route: Route, review: Review) -> Response:
    request = request_of(review)
    kind = request.get("kind")
    group_version_kind = (
        (kind.get("group"), kind.get("version"), kind.get("kind")) if isinstance(kind, Mapping) else None
    )
    if group_version_kind != (API_GROUP, API_VERSION, route.kind):
        return deny(
            review,
            [
                f"`request.kind`: this webhook path ({route.path}) admits `{route.kind}` of "
                f"`{API_GROUP}/{API_VERSION}`, not {_gvk(kind)}"
            ],
            code=400,
            reason="BadRequest",
        )
    operation = request.get("operation")
    if operation == "DELETE":
        return allow(review)
    if operation not in WRITES:
        return deny(
            review,
            [f"`request.operation`: must be CREATE, UPDATE or DELETE, not {_text(operation)}"],
            code=400,
            reason="BadRequest",
        )
    if request.get("subResource"):
        return allow(review)
    obj = request.get("object")
    if not isinstance(obj, Mapping):
        return deny(
            review,
            [f"`request.object`: must be the {route.kind} being written, for a {operation}"],
            code=400,
            reason="BadRequest",
        )
    return route.decide(review, obj)


def _gvk(kind: object) -> str:
    if not isinstance(kind, Mapping):
        return _text(kind)
    group, version, name = (kind.get(k) for k in ("group", "version", "kind"))
    return f"`{name}` of `{group or 'core'}/{version}`"


def _text(value: object) -> str:
    return "nothing" if value is None else f"`{str(value)[:64]}`"
