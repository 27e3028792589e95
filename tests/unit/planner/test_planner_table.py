"""Table tests of plan_order with real models on a fleet shaped like the default one."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from controller.model_facts.facts import ModelFacts
from shared import reasons
from testkit.mirror_facts import facts_of
from testkit.planner import (
    BGE_LARGE,
    BGE_RERANKER,
    LLAMA_8B,
    LLAMA_8B_GGUF,
    LLAMA_70B,
    LLAMA_405B,
    QWEN3_8B_FP8,
    QWEN_32B_AWQ,
    fleet_inventory,
    make_class,
    make_recipe,
    plan,
)

PRODUCT = 'device.attributes["gpu.nvidia.com"].productName'
A100_ONLY = f'{PRODUCT}.matches("A100")'


@dataclass(frozen=True)
class Case:
    name: str
    facts: ModelFacts
    reason: str
    changes: dict[str, Any] = field(default_factory=dict)
    product: str | None = None
    count: int | None = None
    sharing_mode: str | None = None
    args_include: tuple[str, ...] = ()
    message_include: tuple[str, ...] = ()


CASES = [
    Case(
        "a 32B AWQ model lands on the smallest device that holds it, vLLM picking the AWQ kernel",
        QWEN_32B_AWQ,
        reasons.PLANNED_OK,
        product="NVIDIA A100-SXM4-40GB",
        count=1,
        sharing_mode="Exclusive",
        args_include=("--tensor-parallel-size 1",),
    ),
    Case(
        "an 8B instruct model gets one whole L4",
        LLAMA_8B,
        reasons.PLANNED_OK,
        product="NVIDIA L4",
        count=1,
        args_include=("--served-model-name meta-llama/Llama-3.1-8B-Instruct",),
    ),
    Case(
        "a 70B instruct model needs tensor parallel on H100s of one node",
        LLAMA_70B,
        reasons.PLANNED_OK,
        product="NVIDIA H100 80GB HBM3",
        count=4,
        args_include=("--tensor-parallel-size 4",),
    ),
    Case(
        "an embedding model is served by the pooling runner",
        BGE_LARGE,
        reasons.PLANNED_OK,
        count=1,
        args_include=("--runner pooling", "--convert embed", "--max-model-len 512"),
    ),
    Case(
        "an embedding model takes the smallest MIG profile when the class prefers MIG",
        BGE_LARGE,
        reasons.PLANNED_OK,
        changes={"class_spec": make_class(deviceClassNames=["mig.nvidia.com"], sharingModes=["MIG"])},
        sharing_mode="MIG",
        count=1,
    ),
    Case(
        "a reranker is served with the classification converter for the score API",
        BGE_RERANKER,
        reasons.PLANNED_OK,
        args_include=("--runner pooling", "--convert classify"),
    ),
    Case(
        "an FP8 model on a class that allows only A100 is a quantization mismatch",
        QWEN3_8B_FP8,
        reasons.QUANTIZATION_MISMATCH,
        changes={"class_spec": make_class(selector=A100_ONLY)},
        message_include=("8.9", "8.0", "A100"),
    ),
    Case(
        "a GGUF model against a recipe without GGUF has no compatible runtime",
        LLAMA_8B_GGUF,
        reasons.NO_COMPATIBLE_RUNTIME_AVAILABLE,
        message_include=("GGUF",),
    ),
    Case(
        "a GGUF model is served when a recipe loads GGUF",
        LLAMA_8B_GGUF,
        reasons.PLANNED_OK,
        changes={"recipes": [make_recipe(formats=["Safetensors", "GGUF"])]},
        args_include=("--quantization gguf",),
    ),
    Case(
        "a selector that does not compile makes placement undecidable",
        LLAMA_8B,
        reasons.PLACEMENT_UNDECIDABLE,
        changes={"class_spec": make_class(selector=f"{PRODUCT}.matches(")},
        message_include=("spec.placement.selector", "line 1"),
    ),
    Case(
        "a selector that evaluates to a string makes placement undecidable",
        LLAMA_8B,
        reasons.PLACEMENT_UNDECIDABLE,
        changes={"class_spec": make_class(selector=PRODUCT)},
        message_include=("bool",),
    ),
    Case(
        "a device class that does not exist makes placement undecidable",
        LLAMA_8B,
        reasons.PLACEMENT_UNDECIDABLE,
        changes={"class_spec": make_class(deviceClassNames=["tpu.example.com"])},
        message_include=("tpu.example.com",),
    ),
    Case(
        "a model no allowed device could ever hold names the largest device",
        LLAMA_405B,
        reasons.NO_ACCELERATOR_WITH_ENOUGH_MEMORY,
        message_include=("per replica", "largest allowed device is NVIDIA H100 80GB HBM3 with 80 GiB"),
    ),
    Case(
        "a model too large for an L4-only class says so in numbers",
        LLAMA_70B,
        reasons.NO_ACCELERATOR_WITH_ENOUGH_MEMORY,
        changes={
            "class_spec": make_class(
                selector='device.attributes["gpu.nvidia.com"].productName == "NVIDIA L4"'
            )
        },
        message_include=("largest allowed device is NVIDIA L4 with 24 GiB",),
    ),
    Case(
        "an order whose every device class failed at the scheduler is exhausted",
        LLAMA_8B,
        reasons.RESOURCE_CLAIM_EXHAUSTED,
        changes={"skip_device_classes": ("gpu.nvidia.com", "mig.nvidia.com")},
    ),
    Case(
        "a fallback to classes that cannot hold the model waits, never a terminal reason",
        LLAMA_70B,
        reasons.RESOURCE_CLAIM_EXHAUSTED,
        changes={"skip_device_classes": ("gpu.nvidia.com",)},
        message_include=("could not allocate the claim on gpu.nvidia.com", "largest allowed device"),
    ),
    Case(
        "a device class the scheduler failed on is skipped for the next one",
        BGE_LARGE,
        reasons.PLANNED_OK,
        changes={
            "skip_device_classes": ("gpu.nvidia.com",),
            "class_spec": make_class(sharingModes=["Exclusive", "MIG"]),
        },
        sharing_mode="MIG",
    ),
    Case(
        "a recipe that does not know the architecture leaves no runtime",
        LLAMA_8B,
        reasons.NO_COMPATIBLE_RUNTIME_AVAILABLE,
        changes={"recipes": [make_recipe(architectures=["Qwen2ForCausalLM"])]},
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_plan_order_on_the_default_fleet(case: Case) -> None:
    outcome = plan(fleet_inventory(), case.facts, **case.changes)
    assert outcome.reason == case.reason, outcome.message
    assert outcome.ok is (case.reason == reasons.PLANNED_OK)
    assert outcome.message.endswith(".")
    for fragment in case.message_include:
        assert fragment in outcome.message
    if not outcome.ok:
        assert outcome.plan is None
        return
    p = outcome.plan
    assert p is not None
    if case.product is not None:
        assert p.product_name == case.product
    if case.count is not None:
        assert p.accelerator_count == case.count
        assert p.placement_mode == ("TensorParallel" if case.count > 1 else "SingleDevice")
    if case.sharing_mode is not None:
        assert p.sharing_mode == case.sharing_mode
    assert (p.share_percent == 100) is (p.sharing_mode == "Exclusive")
    joined = " ".join(p.args)
    for fragment in case.args_include:
        assert fragment in joined
    assert not any(a.startswith("--api-key") for a in p.args), "the key comes from VLLM_API_KEY"
    assert "--quantization awq_marlin" not in joined and "--quantization awq " not in joined
    assert f"--max-model-len {p.max_model_len}" in joined
    assert p.max_model_len >= min(4096, case.facts.context_length or 4096)
    assert len(outcome.allocation) == p.accelerator_count
    assert p.device_selectors[0].endswith(f'productName == "{p.product_name}"')


def test_a_sentence_transformers_model_is_launched_within_its_max_seq_length() -> None:
    """vLLM refuses a --max-model-len above max_seq_length: all-MiniLM-L6-v2 gets 256, not its 512 positions."""
    minilm = facts_of("sentence-transformers/all-MiniLM-L6-v2")
    outcome = plan(fleet_inventory(), minilm)
    assert outcome.ok, outcome.message
    assert outcome.plan is not None
    args = outcome.plan.args
    assert args[args.index("--max-model-len") + 1] == "256"
    assert outcome.plan.max_model_len == 256
    uncapped = plan(fleet_inventory(), minilm.model_copy(update={"max_seq_length": None}))
    assert uncapped.plan is not None and uncapped.plan.max_model_len == 512
