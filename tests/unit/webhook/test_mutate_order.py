"""Pruning orders: the JSONPatch against the raw object, and a warning per removed path."""

from __future__ import annotations

import base64
import json
from typing import Any

import jsonpatch
import pytest

from shared.api.order import InferenceServiceSpec
from testkit.webhook import make_order, make_review
from webhook.handlers import ROUTES, handle
from webhook.mutate_order import MAX_WARNINGS, pruning
from webhook.order_fields import order_spec_tree

MUTATE = next(r for r in ROUTES if r.mutating)


def apply(order: dict[str, Any], patch: list[dict[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = jsonpatch.apply_patch(order, patch)
    return result


def test_the_allowed_tree_is_the_wire_names_of_the_order_models() -> None:
    tree = order_spec_tree()
    assert set(tree.children) == {f.alias for f in InferenceServiceSpec.model_fields.values()}
    model = tree.children["model"]
    assert model is not None
    assert set(model.children) == {"src", "ref", "authSecretRef"}


def test_a_clean_order_gets_no_patch_and_no_warning() -> None:
    assert pruning(make_order()) == ([], [])


@pytest.mark.parametrize(
    ("changes", "removed"),
    [
        pytest.param({"spec__runtime": {"image": "vllm"}}, ["/spec/runtime"], id="spec.runtime is removed"),
        pytest.param(
            {"spec__resources": {"limits": {"nvidia.com/gpu": 8}}},
            ["/spec/resources"],
            id="spec.resources is removed",
        ),
        pytest.param(
            {"spec__replicas": 3, "spec__nodeSelector": {"a": "b"}},
            ["/spec/replicas", "/spec/nodeSelector"],
            id="every unknown top-level field is removed",
        ),
        pytest.param(
            {"spec__model__ref__digest": "sha256:x"},
            ["/spec/model/ref/digest"],
            id="an unknown nested field is removed",
        ),
        pytest.param(
            {"spec__model__weird/~key": 1},
            ["/spec/model/weird~1~0key"],
            id="a key with slash and tilde is escaped as a JSON pointer",
        ),
    ],
)
def test_a_field_an_order_may_not_carry_is_removed(changes: dict[str, Any], removed: list[str]) -> None:
    order = make_order(**changes)
    patch, warnings = pruning(order)
    assert sorted(op["path"] for op in patch) == sorted(removed)
    assert all(op["op"] == "remove" for op in patch)
    assert apply(order, patch) == make_order()
    assert len(warnings) == len(removed)
    assert all(w.startswith("removed `spec.") for w in warnings)


def test_the_warning_names_the_removed_path() -> None:
    _, warnings = pruning(make_order(spec__runtime={"image": "vllm"}))
    assert warnings == [
        "removed `spec.runtime`: an order carries only its class and its model; the platform decides the rest"
    ]


def test_metadata_and_status_are_never_touched() -> None:
    order = make_order(spec__runtime={}, metadata__labels={"team": "a"}, status={"phase": "Ready"})
    order["metadata"]["x-unknown"] = 1
    patch, _ = pruning(order)
    assert [op["path"] for op in patch] == ["/spec/runtime"]


def test_many_removed_fields_give_a_bounded_number_of_warnings() -> None:
    order = make_order(**{f"spec__extra{i}": i for i in range(50)})
    patch, warnings = pruning(order)
    assert len(patch) == 50
    assert len(warnings) == MAX_WARNINGS + 1
    assert warnings[-1] == f"removed {50 - MAX_WARNINGS} more fields an order may not carry"


def test_the_mutating_response_carries_a_base64_jsonpatch_and_the_warnings() -> None:
    order = make_order(spec__runtime={"image": "vllm"})
    answer = handle(MUTATE, make_review(order))["response"]
    assert answer["allowed"] is True
    assert answer["patchType"] == "JSONPatch"
    assert json.loads(base64.b64decode(answer["patch"])) == [{"op": "remove", "path": "/spec/runtime"}]
    assert answer["warnings"][0].startswith("removed `spec.runtime`")


def test_the_original_request_object_is_not_changed() -> None:
    order = make_order(spec__runtime={"image": "vllm"}, spec__model__ref__x=1)
    before = json.dumps(order, sort_keys=True)
    pruning(order)
    assert json.dumps(order, sort_keys=True) == before
