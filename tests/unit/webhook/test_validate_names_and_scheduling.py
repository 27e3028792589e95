"""Order names a Service cannot take are refused on CREATE; a class's node selector and
tolerations must be ones the API server accepts on a pod."""

from __future__ import annotations

from typing import Any

import pytest

from testkit.webhook import make_class, make_order, make_review
from webhook.handlers import ROUTES, handle
from webhook.validate_class import class_problems
from webhook.validate_order import order_name_problems

ORDER_VALIDATE = {r.path: r for r in ROUTES}["/validate-inferenceservice"]


def named(name: str) -> dict[str, Any]:
    order = make_order()
    order["metadata"] = {**order.get("metadata", {}), "name": name}
    return order


@pytest.mark.parametrize("name", ["llama3.1", "8b-chat", "Chat", "a_b", "x" * 64, "chat-"])
def test_a_name_valid_for_the_crd_but_not_for_a_service_is_refused_at_create(name: str) -> None:
    answer = handle(ORDER_VALIDATE, make_review(named(name)))["response"]
    assert answer["allowed"] is False
    message = answer["status"]["message"]
    assert message.startswith("`metadata.name`: must be a DNS-1035 label")
    assert f'not "{name}"' in message and "[a-z]([-a-z0-9]*[a-z0-9])?" in message


@pytest.mark.parametrize("name", ["support-llm", "llama3-1", "a", "x" * 63])
def test_a_dns_1035_label_is_a_valid_order_name(name: str) -> None:
    assert order_name_problems(named(name)) == []


def test_an_existing_order_is_never_refused_for_its_name_on_update() -> None:
    answer = handle(ORDER_VALIDATE, make_review(named("llama3.1"), operation="UPDATE"))["response"]
    assert answer["allowed"] is True


def placement(**changes: Any) -> dict[str, Any]:
    klass = make_class()
    klass["spec"]["placement"] = {**klass["spec"]["placement"], **changes}
    return klass


def test_gpu_node_tolerations_and_a_node_selector_are_valid() -> None:
    klass = placement(
        nodeSelector={"nvidia.com/gpu.present": "true", "pool": "h100"},
        tolerations=[
            {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
            {"key": "dedicated", "value": "llm", "effect": "NoExecute", "tolerationSeconds": 300},
            {"operator": "Exists"},
        ],
    )
    assert class_problems(klass) == []


@pytest.mark.parametrize(
    ("changes", "problem"),
    [
        (
            {"nodeSelector": {"bad key!": "x"}},
            "`spec.placement.nodeSelector.bad key!`: the key must be a label key",
        ),
        ({"nodeSelector": {"pool": "a b"}}, "`spec.placement.nodeSelector.pool`: must be a label value"),
        (
            {"tolerations": [{"operator": "Equal", "value": "x"}]},
            "`spec.placement.tolerations[0].key`: is required unless `operator` is `Exists`",
        ),
        (
            {"tolerations": [{"key": "k", "operator": "Exists", "value": "x"}]},
            "`spec.placement.tolerations[0].value`: must be empty when `operator` is `Exists`",
        ),
        (
            {"tolerations": [{"key": "k", "effect": "NoSchedule", "tolerationSeconds": 5}]},
            "`spec.placement.tolerations[0].tolerationSeconds`: may be set only when `effect` is `NoExecute`",
        ),
        (
            {"tolerations": [{"key": "k", "operator": "In"}]},
            "`spec.placement.tolerations[0].operator`: must be one of `Exists` or `Equal`",
        ),
        (
            {"tolerations": [{"key": "k", "effect": "Never"}]},
            "`spec.placement.tolerations[0].effect`: must be one of",
        ),
    ],
)
def test_a_node_selector_or_toleration_a_pod_cannot_carry_is_refused(
    changes: dict[str, Any], problem: str
) -> None:
    problems = class_problems(placement(**changes))
    assert len(problems) == 1, problems
    assert problems[0].startswith(problem)
