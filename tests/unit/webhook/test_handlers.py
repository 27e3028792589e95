"""The dispatch around the decisions: kinds, operations, DELETE, subresources, uid, bugs."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from testkit.webhook import make_class, make_order, make_recipe, make_review
from webhook.handlers import ROUTES, Route, handle

BY_PATH = {r.path: r for r in ROUTES}
ORDER_VALIDATE = BY_PATH["/validate-inferenceservice"]


@pytest.mark.parametrize(
    ("path", "obj"),
    [
        ("/mutate-inferenceservice", make_order()),
        ("/validate-inferenceservice", make_order()),
        ("/validate-inferenceserviceclass", make_class()),
        ("/validate-inferencerecipe", make_recipe()),
    ],
)
@pytest.mark.parametrize("operation", ["CREATE", "UPDATE"])
def test_a_valid_write_is_allowed_on_every_path(path: str, obj: dict[str, Any], operation: str) -> None:
    answer = handle(BY_PATH[path], make_review(obj, operation=operation, uid="u-1"))
    assert answer["apiVersion"] == "admission.k8s.io/v1"
    assert answer["kind"] == "AdmissionReview"
    assert answer["response"] == {"uid": "u-1", "allowed": True}


def test_an_update_may_change_the_model_and_the_class() -> None:
    old = make_order()
    new = make_order(
        spec__inferenceServiceClassName="large-llm", spec__model__ref__name="meta-llama/Llama-3.1-8B"
    )
    review = make_review(new, operation="UPDATE")
    review["request"]["oldObject"] = old
    assert handle(ORDER_VALIDATE, review)["response"]["allowed"] is True


def test_the_uid_is_echoed_on_a_refusal() -> None:
    review = make_review(make_order(spec__model__src="S3"), uid="abc-123")
    answer = handle(ORDER_VALIDATE, review)["response"]
    assert answer["uid"] == "abc-123"
    assert answer["allowed"] is False
    assert answer["status"]["code"] == 422
    assert (
        answer["status"]["message"] == '`spec.model.src`: must be one of `HuggingFace` or `Catalog`, not "S3"'
    )


def test_several_problems_are_joined_into_one_message() -> None:
    review = make_review(make_order(spec__inferenceServiceClassName="X", spec__model__src="S3"))
    message = handle(ORDER_VALIDATE, review)["response"]["status"]["message"]
    assert message.count("; ") == 1
    assert message.startswith("`spec.inferenceServiceClassName`")


@pytest.mark.parametrize("path", sorted(BY_PATH))
def test_delete_is_allowed(path: str) -> None:
    review = make_review(None, operation="DELETE", kind=BY_PATH[path].kind)
    assert handle(BY_PATH[path], review)["response"]["allowed"] is True


@pytest.mark.parametrize("operation", ["CONNECT", "PATCH", None])
def test_an_unexpected_operation_is_refused_saying_what_was_expected(operation: str | None) -> None:
    review = make_review(make_order())
    review["request"]["operation"] = operation
    answer = handle(ORDER_VALIDATE, review)["response"]
    assert answer["allowed"] is False
    assert answer["status"]["code"] == 400
    assert "must be CREATE, UPDATE or DELETE" in answer["status"]["message"]


@pytest.mark.parametrize(
    ("kind", "group", "shown"),
    [
        ("Pod", "", "`Pod` of `core/v1alpha1`"),
        ("InferenceServiceClass", "ai.deckhouse.io", "`InferenceServiceClass` of `ai.deckhouse.io/v1alpha1`"),
        ("InferenceService", "serving.kserve.io", "`InferenceService` of `serving.kserve.io/v1alpha1`"),
    ],
)
def test_an_unexpected_kind_is_refused_saying_what_was_expected(kind: str, group: str, shown: str) -> None:
    answer = handle(ORDER_VALIDATE, make_review(make_order(), kind=kind, group=group))["response"]
    assert answer["allowed"] is False
    assert answer["status"]["message"] == (
        "`request.kind`: this webhook path (/validate-inferenceservice) admits `InferenceService` of "
        f"`ai.deckhouse.io/v1alpha1`, not {shown}"
    )


def test_a_write_to_the_status_subresource_is_allowed() -> None:
    review = make_review(make_order(spec__model__src="S3"), operation="UPDATE", sub_resource="status")
    assert handle(ORDER_VALIDATE, review)["response"]["allowed"] is True


def test_a_create_without_an_object_is_refused() -> None:
    answer = handle(ORDER_VALIDATE, make_review(None))["response"]
    assert answer["allowed"] is False
    assert "`request.object`" in answer["status"]["message"]


def test_a_bug_in_a_decision_becomes_a_refusal_carrying_the_uid() -> None:
    def broken(review: Any, obj: Any) -> Any:
        raise KeyError("boom")

    route: Route = replace(ORDER_VALIDATE, decide=broken)
    answer = handle(route, make_review(make_order(), uid="bug-1"))["response"]
    assert answer["uid"] == "bug-1"
    assert answer["allowed"] is False
    assert answer["status"]["code"] == 403
    assert "internal error KeyError" in answer["status"]["message"]
    assert "500" not in str(answer["status"]["code"])
