"""Parsing an AdmissionReview body: what is refused with HTTP 400, and why."""

from __future__ import annotations

import json

import pytest

from testkit.webhook import make_order, make_review
from webhook.review import MAX_BODY_BYTES, MalformedReviewError, parse_review


def body(**changes: object) -> bytes:
    review = make_review(make_order())
    review.update(changes)
    return json.dumps(review).encode()


def test_a_well_formed_review_parses() -> None:
    assert parse_review(body())["request"]["uid"]


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        pytest.param(b"{not json", "the body is not JSON", id="broken JSON"),
        pytest.param(
            b"[1, 2]", "must be a JSON object (an AdmissionReview), not an array", id="a JSON array"
        ),
        pytest.param(
            body(apiVersion="admission.k8s.io/v1beta1"),
            "`apiVersion` must be `admission.k8s.io/v1`, not `admission.k8s.io/v1beta1`",
            id="a wrong apiVersion",
        ),
        pytest.param(body(kind="Pod"), "`kind` must be `AdmissionReview`, not `Pod`", id="a wrong kind"),
        pytest.param(body(request=None), "`request` must be an object", id="no request"),
        pytest.param(body(request={"uid": ""}), "`request.uid` must be a non-empty string", id="no uid"),
        pytest.param(b" " * (MAX_BODY_BYTES + 1), "at most 3145728 (3 MiB)", id="more than 3 MiB"),
        pytest.param(b"[" * 100_000, "the body is not JSON", id="deeply nested JSON"),
    ],
)
def test_a_malformed_body_is_refused_with_a_reason(raw: bytes, reason: str) -> None:
    with pytest.raises(MalformedReviewError) as caught:
        parse_review(raw)
    assert reason in str(caught.value)
