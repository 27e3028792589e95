"""AdmissionReview (admission.k8s.io/v1) on the wire: parse a request body, build the responses.

The app calls ``parse_review`` on the raw body; handlers call ``allow``, ``deny`` and ``refuse_internal``.
Everything here is pure. A refusal's ``status.code`` says why: 422 the object is invalid, 400 the
request is not one this path admits (kind, operation), 403 the webhook itself failed (fail closed).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping, Sequence
from typing import Any

ADMISSION_API_VERSION = "admission.k8s.io/v1"
ADMISSION_KIND = "AdmissionReview"
MAX_BODY_BYTES = 3 * 1024 * 1024

Review = Mapping[str, Any]
Response = dict[str, Any]


class MalformedReviewError(ValueError):
    """The body is not an AdmissionReview we can answer: HTTP 400 with this message."""


def parse_review(body: bytes) -> dict[str, Any]:
    """The AdmissionReview in ``body``; MalformedReviewError says what is wrong with it."""
    if len(body) > MAX_BODY_BYTES:
        raise MalformedReviewError(
            f"the body is {len(body)} bytes; at most {MAX_BODY_BYTES} (3 MiB) are accepted"
        )
    try:
        review = json.loads(body)
    except (ValueError, RecursionError) as e:
        raise MalformedReviewError(f"the body is not JSON: {e}") from None
    if not isinstance(review, dict):
        raise MalformedReviewError(
            f"the body must be a JSON object (an AdmissionReview), not {_json_type(review)}"
        )
    if review.get("apiVersion") != ADMISSION_API_VERSION:
        raise MalformedReviewError(
            f"`apiVersion` must be `{ADMISSION_API_VERSION}`, not {_shown(review.get('apiVersion'))}"
        )
    if review.get("kind") != ADMISSION_KIND:
        raise MalformedReviewError(f"`kind` must be `{ADMISSION_KIND}`, not {_shown(review.get('kind'))}")
    request = review.get("request")
    if not isinstance(request, dict):
        raise MalformedReviewError(
            "`request` must be an object: an AdmissionReview without a request cannot be answered"
        )
    uid = request.get("uid")
    if not isinstance(uid, str) or not uid:
        raise MalformedReviewError("`request.uid` must be a non-empty string: the response must echo it")
    return review


def request_of(review: Review) -> Mapping[str, Any]:
    """The ``request`` of a parsed review."""
    request = review["request"]
    assert isinstance(request, Mapping)
    return request


def allow(
    review: Review, *, warnings: Sequence[str] = (), patch: Sequence[Mapping[str, Any]] = ()
) -> Response:
    """An allowing response, with admission warnings and a JSONPatch when given."""
    response: dict[str, Any] = {"uid": request_of(review)["uid"], "allowed": True}
    if warnings:
        response["warnings"] = list(warnings)
    if patch:
        response["patchType"] = "JSONPatch"
        response["patch"] = base64.b64encode(json.dumps(list(patch)).encode()).decode()
    return _wrap(response)


def deny(review: Review, problems: Sequence[str], *, code: int = 422, reason: str = "Invalid") -> Response:
    """A refusing response naming every problem, in the order found."""
    message = problems[0] if len(problems) == 1 else "; ".join(problems)
    return _wrap(
        {
            "uid": request_of(review)["uid"],
            "allowed": False,
            "status": {"status": "Failure", "code": code, "reason": reason, "message": message},
        }
    )


def refuse_internal(review: Review, error: BaseException) -> Response:
    """A handler bug: the write is refused (fail closed) with a message that says so, never a 500."""
    return deny(
        review,
        [
            f"the inference admission webhook could not check this object (internal error "
            f"{type(error).__name__}), so the write is refused; retry, and if it persists tell your "
            "platform administrator"
        ],
        code=403,
        reason="Forbidden",
    )


def _wrap(response: dict[str, Any]) -> Response:
    return {"apiVersion": ADMISSION_API_VERSION, "kind": ADMISSION_KIND, "response": response}


def _json_type(value: object) -> str:
    return {list: "an array", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number"
    )


def _shown(value: object) -> str:
    return "missing" if value is None else f"`{str(value)[:64]}`"
