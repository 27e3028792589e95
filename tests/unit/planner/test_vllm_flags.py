"""Every flag a launch plan emits is one that vLLM's own parser accepts, at the recipe's version.

The accepted flags are frozen from vLLM's source per release (standins/runtime/vllm-flags-*.json);
the runtime stand-in refuses any other flag, so end-to-end orders check the same thing.
"""

from __future__ import annotations

import pathlib
from typing import Any

import pytest
import yaml

from controller.planner import plan_order
from controller.planner.vllm import VllmLaunch, vllm_args
from devtools.dump_vllm_flags import flags_document
from shared import runtime_images
from standins.runtime.vllm_flags import (
    accepted_flags,
    flag_name,
    frozen_versions,
    image_version,
    refusal,
    unknown_flags,
)
from testkit.planner import (
    BGE_LARGE,
    BGE_RERANKER,
    LLAMA_8B,
    LLAMA_405B,
    QWEN_32B_AWQ,
    fleet_inventory,
    make_class,
    make_recipe,
    make_request,
)

ROOT = pathlib.Path(__file__).resolve().parents[3]
BUNDLED = yaml.safe_load((ROOT / "deploy/base/platform/vllm.yaml").read_text())["spec"]


def bundled_flags() -> frozenset[str]:
    version = image_version(BUNDLED["image"])
    assert version is not None
    return accepted_flags(version)


def test_the_bundled_recipes_vllm_version_has_a_frozen_flag_list() -> None:
    assert image_version(BUNDLED["image"]) in frozen_versions()
    flags = bundled_flags()
    assert {"--model", "--api-key", "--ssl-certfile", "--enable-ssl-refresh", "--trust-remote-code"} <= flags
    assert "--runner" in flags and "--convert" in flags, "0.11 pools with --runner/--convert"


def launches() -> list[VllmLaunch]:
    base: dict[str, Any] = {
        "facts": LLAMA_8B,
        "endpoint_type": "Chat",
        "served_model_name": LLAMA_8B.name,
        "tensor_parallel_size": 1,
        "max_model_len": 8192,
        "gpu_memory_utilization": 0.9,
        "quantization": "none",
        "compute_capability": (9, 0),
        "extra_args": tuple(BUNDLED.get("extraArgs") or ()),
    }
    variants: list[dict[str, Any]] = [
        {},
        {"tensor_parallel_size": 4},
        {"tensor_parallel_size": 8, "pipeline_parallel_size": 2},  # multi-node, on Ray
        {"facts": QWEN_32B_AWQ, "quantization": "awq"},
        {"quantization": "gguf"},
        {"facts": BGE_LARGE, "endpoint_type": "Embeddings"},
        {"facts": BGE_RERANKER, "endpoint_type": "Rerank"},
        {"facts": LLAMA_8B.model_copy(update={"requires_remote_code": True})},
    ]
    return [VllmLaunch(**{**base, **v}) for v in variants]


@pytest.mark.parametrize(
    "launch", launches(), ids=lambda launch: f"{launch.endpoint_type}-{launch.quantization}"
)
def test_every_flag_of_a_launch_is_accepted_by_vllm_of_the_recipes_version(launch: VllmLaunch) -> None:
    assert unknown_flags(vllm_args(launch), bundled_flags()) == []


@pytest.mark.parametrize("facts", [LLAMA_8B, QWEN_32B_AWQ, BGE_LARGE, BGE_RERANKER], ids=lambda f: f.name)
def test_every_flag_of_a_plan_on_the_default_fleet_is_accepted(facts: Any) -> None:
    recipe = make_recipe(image=BUNDLED["image"], extraArgs=BUNDLED.get("extraArgs") or [])
    outcome = plan_order(make_request(fleet_inventory(), facts, recipes=[recipe]))
    assert outcome.plan is not None, outcome.message
    assert refusal(outcome.plan.image, outcome.plan.args) is None


def test_every_flag_of_a_multinode_plan_on_the_default_fleet_is_accepted() -> None:
    recipe = make_recipe(image=BUNDLED["image"], extraArgs=BUNDLED.get("extraArgs") or [])
    spec = make_class(deviceClassNames=["gpu.nvidia.com"], maxNodesPerReplica=2)
    outcome = plan_order(make_request(fleet_inventory(), LLAMA_405B, recipes=[recipe], class_spec=spec))
    assert outcome.plan is not None and outcome.plan.node_count == 2, outcome.message
    assert "--pipeline-parallel-size" in outcome.plan.args
    assert refusal(outcome.plan.image, outcome.plan.args) is None


@pytest.mark.parametrize(
    ("arg", "name"),
    [
        ("--max-model-len", "--max-model-len"),
        ("--max_model_len=8", "--max-model-len"),
        ("-tp", "-tp"),
        ("-O3", "-O"),
        ("8192", None),
        ("-1", None),
    ],
)
def test_flag_names_are_read_as_the_parser_reads_them(arg: str, name: str | None) -> None:
    assert flag_name(arg) == name


def test_an_unknown_flag_and_a_removed_one_are_both_refused_with_vllms_words() -> None:
    """``--enable-ssl-reload`` never existed (the flag is ``--enable-ssl-refresh``);
    ``--use-v2-block-manager`` was deprecated in vLLM 0.6.3 (vllm#8704) and is gone from the parser."""
    args = ["--model", "/models/model", "--enable-ssl-reload", "--use-v2-block-manager", "--api-key=x"]
    assert refusal(runtime_images.pinned().image, args) == (
        "vllm serve: error: unrecognized arguments: --enable-ssl-reload --use-v2-block-manager"
    )


def test_each_release_is_checked_against_its_own_parser() -> None:
    """``--task`` is deprecated since vLLM 0.10 (vllm#21470: ``--runner``/``--convert``): 0.11 still
    parses it, the pinned release refuses it. The plans never emit it (test_planner_vllm)."""
    args = ["--model", "/models/model", "--task", "embed"]
    assert refusal("vllm/vllm-openai:v0.11.0", args) is None
    assert refusal(runtime_images.pinned().image, args) == "vllm serve: error: unrecognized arguments: --task"


def test_the_bundled_recipe_runs_the_pinned_release_and_every_supported_one_has_its_flags() -> None:
    """One place names the releases (shared/runtime_images.py); the YAML recipe cannot import it."""
    assert BUNDLED["image"] == runtime_images.pinned().image
    assert {r.version for r in runtime_images.SUPPORTED} <= set(frozen_versions())
    # Read from the real parser (python -m devtools.dump_vllm_flags), not by hand.
    assert len(accepted_flags(runtime_images.PINNED)) > 400


def test_a_vllm_image_without_a_frozen_version_is_refused_and_other_images_are_not_checked() -> None:
    assert "no frozen flag list for vLLM 0.1.0" in (refusal("vllm/vllm-openai:v0.1.0", []) or "")
    assert "cannot tell the vLLM version" in (refusal("vllm/vllm-openai:latest", []) or "")
    assert refusal("example.com/other:latest", ["--anything"]) is None


def test_the_dumped_flag_file_has_the_shape_the_stand_in_reads() -> None:
    doc = flags_document("9.9.9", ["--b", "--a", "-h", "--help", "--a"])
    assert doc["vllm"] == "9.9.9"
    assert doc["flags"] == ["--a", "--b"]
