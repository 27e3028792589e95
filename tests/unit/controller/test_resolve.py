"""Class resolution and the model policy checks."""

from __future__ import annotations

import pytest

from controller.conditions import resolve
from shared import reasons as r
from tests.unit.controller.builders import make_class, make_facts, make_order


def test_an_order_whose_class_does_not_exist_gets_class_not_found() -> None:
    v = resolve.class_verdict("nope", None, recipe_names=[])
    assert (v.status, v.reason) == ("False", r.CLASS_NOT_FOUND)
    assert "`nope`" in v.message


def test_a_class_naming_a_missing_recipe_is_not_ready() -> None:
    v = resolve.class_verdict("default-llm", make_class(spec={"recipes": ["vllm"]}), recipe_names=["other"])
    assert (v.status, v.reason) == ("False", r.CLASS_NOT_READY)
    assert "vllm" in v.message


def test_a_class_with_its_recipes_resolves() -> None:
    v = resolve.class_verdict("default-llm", make_class(spec={"recipes": ["vllm"]}), recipe_names=["vllm"])
    assert (v.status, v.reason) == ("True", r.RESOLVED)


def test_class_readiness_reports_every_problem_at_once() -> None:
    spec = make_class(spec={"recipes": ["vllm"], "placement": {"deviceClassNames": ["tpu.example.com"]}}).spec
    v = resolve.class_readiness(
        spec, recipe_names=[], device_class_names=["gpu.nvidia.com"], selector_error="1:3: x"
    )
    assert v.status == "False"
    assert "vllm" in v.message and "tpu.example.com" in v.message and "selector" in v.message


@pytest.mark.parametrize(
    ("name", "class_changes", "fact_changes", "reason", "picked"),
    [
        ("a chat model on a class allowing chat resolves", {}, {}, r.RESOLVED, "Chat"),
        (
            "the endpoint type follows the class's order",
            {"modelPolicy": {"allowedEndpointTypes": ["Embeddings", "Chat"]}},
            {"endpoint_types": ("Chat", "Embeddings")},
            r.RESOLVED,
            "Embeddings",
        ),
        (
            "an embedding model on a chat-only class conflicts",
            {"modelPolicy": {"allowedEndpointTypes": ["Chat"]}},
            {"endpoint_types": ("Embeddings",)},
            r.ENDPOINT_TYPE_POLICY_CONFLICT,
            None,
        ),
        (
            "a GGUF model on a safetensors-only class is refused",
            {"modelPolicy": {"allowedFormats": ["Safetensors"]}},
            {"format": "GGUF"},
            r.FORMAT_NOT_ALLOWED,
            None,
        ),
        (
            "a 32B model above a 8B cap is refused",
            {"modelPolicy": {"parameterCount": {"max": "8B"}}},
            {},
            r.PARAMETER_COUNT_NOT_ALLOWED,
            None,
        ),
        (
            "a 32B model below a 70B floor is refused",
            {"modelPolicy": {"parameterCount": {"min": "70B"}}},
            {},
            r.PARAMETER_COUNT_NOT_ALLOWED,
            None,
        ),
        (
            "a 32B model within 500M..80B passes",
            {"modelPolicy": {"parameterCount": {"min": "500M", "max": 80_000_000_000}}},
            {},
            r.RESOLVED,
            "Chat",
        ),
    ],
)
def test_the_model_policy_of_the_class(
    name: str,
    class_changes: dict[str, object],
    fact_changes: dict[str, object],
    reason: str,
    picked: str | None,
) -> None:
    v, endpoint_type = resolve.policy_verdict(make_facts(**fact_changes), make_class(spec=class_changes).spec)
    assert (v.reason, endpoint_type) == (reason, picked), name


def test_a_source_the_class_does_not_allow_is_refused() -> None:
    order = make_order(spec={"model": {"src": "Catalog", "ref": {"name": "qwen"}}})
    v = resolve.source_verdict(
        order.spec.model, make_class(spec={"modelPolicy": {"allowedSources": ["HuggingFace"]}}).spec
    )
    assert v is not None and v.reason == r.SOURCE_NOT_ALLOWED


def test_a_missing_catalog_model_is_not_found_and_an_unready_one_not_ready() -> None:
    v, facts = resolve.catalog_facts("qwen", "ClusterModel", None)
    assert (v.reason, facts) == (r.MODEL_NOT_FOUND, None)
    v, facts = resolve.catalog_facts(
        "qwen", "ClusterModel", {"metadata": {"name": "qwen"}, "status": {"phase": "Pending"}}
    )
    assert (v.reason, facts) == (r.MODEL_NOT_READY, None)


def test_a_ready_catalog_model_gives_facts() -> None:
    obj = {
        "metadata": {"name": "qwen"},
        "status": {
            "phase": "Ready",
            "resolved": {
                "supportedEndpointTypes": ["Chat"],
                "format": "Safetensors",
                "parameterCount": 7_615_616_512,
                "quantization": "awq-4bit",
                "architecture": "Qwen2ForCausalLM",
                "contextWindowTokens": 32768,
            },
            "source": {"uri": "hf://Qwen/Qwen2.5-7B-Instruct-AWQ", "revision": "abc"},
        },
    }
    v, facts = resolve.catalog_facts("qwen", "ClusterModel", obj)
    assert v.ok and facts is not None
    assert (facts.quantization, facts.quantization_bits, facts.quantization_label) == ("awq", 4, "awq-4bit")
    assert facts.endpoint_types == ("Chat",)
