"""Validation of InferenceRecipe: one row per rule, every problem reported at once."""

from __future__ import annotations

from typing import Any

import pytest

from shared import runtime_images
from testkit.webhook import UNSET, make_recipe
from webhook.validate_recipe import recipe_problems

PINNED_IMAGE = runtime_images.pinned().image


@pytest.mark.parametrize(
    "recipe",
    [
        pytest.param(make_recipe(), id="the bundled vllm recipe is valid"),
        pytest.param(
            make_recipe(spec__image="registry.example.com:5000/ai/vllm-openai@sha256:" + "a" * 64),
            id="an image with a registry port and a digest is valid",
        ),
        pytest.param(
            make_recipe(spec__architectures=["Qwen2ForCausalLM", "LlamaForCausalLM"]),
            id="named architectures are valid",
        ),
        pytest.param(
            make_recipe(
                spec__quantizations=UNSET,
                spec__architectures=UNSET,
                spec__extraArgs=UNSET,
                spec__gpuMemoryUtilization=UNSET,
            ),
            id="a minimal recipe is valid",
        ),
    ],
)
def test_a_valid_recipe_has_no_problems(recipe: dict[str, Any]) -> None:
    assert recipe_problems(recipe) == []


@pytest.mark.parametrize(
    ("recipe", "problems"),
    [
        pytest.param(
            make_recipe(spec__runtime="TGI"),
            ['`spec.runtime`: must be one of `vLLM`, not "TGI"'],
            id="the runtime must have an adapter",
        ),
        pytest.param(
            make_recipe(spec__image=""), ["`spec.image`: must not be empty"], id="the image is not empty"
        ),
        pytest.param(
            make_recipe(spec__image="vllm openai"),
            [
                f"`spec.image`: must be a container image reference such as `{PINNED_IMAGE}`, "
                'not "vllm openai"'
            ],
            id="the image is an image reference",
        ),
        pytest.param(
            make_recipe(spec__image="a..b"),
            [f'`spec.image`: must be a container image reference such as `{PINNED_IMAGE}`, not "a..b"'],
            id="two dots do not join a path component (found by the contract-derived fuzz judge)",
        ),
        pytest.param(
            make_recipe(spec__endpointTypes=[]),
            ["`spec.endpointTypes`: must list at least one item"],
            id="endpointTypes is not empty",
        ),
        pytest.param(
            make_recipe(spec__endpointTypes=["Chat", "Speech"]),
            ['`spec.endpointTypes[1]`: must be one of `Chat`, `Embeddings` or `Rerank`, not "Speech"'],
            id="endpointTypes are known",
        ),
        pytest.param(
            make_recipe(spec__formats=["PyTorch"]),
            ['`spec.formats[0]`: must be one of `Safetensors` or `GGUF`, not "PyTorch"'],
            id="formats are known",
        ),
        pytest.param(
            make_recipe(spec__architectures=["Qwen2 For CausalLM"]),
            [
                "`spec.architectures[0]`: must be a Hugging Face architecture name such as `Qwen2ForCausalLM`, "
                'or "*" for all, not "Qwen2 For CausalLM"'
            ],
            id="architectures are class names or a star",
        ),
        pytest.param(
            make_recipe(spec__quantizations=[{"method": "AWQ", "minComputeCapability": "7.5"}]),
            [
                "`spec.quantizations[0].method`: must be a quantization method in lower case, such as `none`, "
                '`awq`, `gptq`, `fp8` or `gguf`, not "AWQ"'
            ],
            id="a quantization method is a lower-case name",
        ),
        pytest.param(
            make_recipe(
                spec__quantizations=[
                    {"method": "awq", "minComputeCapability": "7.5"},
                    {"method": "awq", "minComputeCapability": "8.0"},
                ]
            ),
            ['`spec.quantizations[1].method`: must not repeat "awq"'],
            id="a quantization method is listed once",
        ),
        pytest.param(
            make_recipe(spec__quantizations=[{"method": "fp8", "minComputeCapability": "sm89"}]),
            [
                "`spec.quantizations[0].minComputeCapability`: must be a CUDA compute capability "
                '`<major>.<minor>` such as "8.9", not "sm89"'
            ],
            id="a compute capability is major.minor",
        ),
        pytest.param(
            make_recipe(spec__quantizations=[{"method": "fp8"}]),
            ["`spec.quantizations[0].minComputeCapability`: is required"],
            id="a compute capability is required",
        ),
        pytest.param(
            make_recipe(spec__gpuMemoryUtilization=0.99),
            ["`spec.gpuMemoryUtilization`: must be a number from 0.5 to 0.98, not 0.99"],
            id="the memory share is at most 0.98",
        ),
        pytest.param(
            make_recipe(spec__extraArgs=["--enforce-eager", 1]),
            ["`spec.extraArgs[1]`: must be a string, not 1"],
            id="extra args are strings",
        ),
    ],
)
def test_an_invalid_recipe_is_refused_with_its_path(recipe: dict[str, Any], problems: list[str]) -> None:
    assert recipe_problems(recipe) == problems


def test_all_problems_of_a_recipe_are_reported_at_once() -> None:
    recipe = make_recipe(spec__image=UNSET, spec__formats=[], spec__gpuMemoryUtilization=2)
    paths = [p.split(":")[0] for p in recipe_problems(recipe)]
    assert paths == ["`spec.image`", "`spec.formats`", "`spec.gpuMemoryUtilization`"]
