"""Builders for planner tests: real model facts, recipes, classes, and small hand-made slices.

The model facts are copied from the models' real config.json and safetensors metadata (numbers
in the comments). The fleet of the table and property tests is ``devtools.cluster.fleet.default_fleet()``;
the small hand-made slices here are for inventory cases (claims, held devices, counters).
"""

from __future__ import annotations

from typing import Any

from controller.model_facts.facts import ModelFacts
from controller.planner import Inventory, PlanOutcome, PlanRequest, build_inventory, plan_order
from devtools.cluster.fleet import default_fleet
from shared import runtime_images
from shared.api.inference_class import InferenceServiceClassSpec
from shared.api.recipe import InferenceRecipe
from shared.names import LABEL_ORDER

DRIVER = "gpu.nvidia.com"


def device_class(name: str, device_type: str) -> dict[str, Any]:
    """A DeviceClass as the NVIDIA DRA driver ships it."""
    expression = f"device.driver == '{DRIVER}' && device.attributes['{DRIVER}'].type == '{device_type}'"
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": name},
        "spec": {"selectors": [{"cel": {"expression": expression}}]},
    }


GPU_CLASS = device_class("gpu.nvidia.com", "gpu")
MIG_CLASS = device_class("mig.nvidia.com", "mig")

# --- models (config.json / safetensors metadata of the real repositories) -------------------------

# Qwen/Qwen2.5-32B-Instruct-AWQ: 64 layers, 40 heads, 8 KV heads, hidden 5120, AWQ 4-bit group 128.
# Safetensors: I32 3,931,176,960 (packed qweight + qzeros), F16 1,802,048,512 (scales, embeddings).
QWEN_32B_AWQ = ModelFacts(
    source="HuggingFace",
    name="Qwen/Qwen2.5-32B-Instruct-AWQ",
    architecture="Qwen2ForCausalLM",
    endpoint_types=("Chat",),
    quantization="awq",
    quantization_bits=4,
    quantization_group_size=128,
    parameter_count=32_763_876_352,
    parameter_dtype_counts={"I32": 3_931_176_960, "F16": 1_802_048_512},
    context_length=32768,
    torch_dtype="float16",
    num_hidden_layers=64,
    num_attention_heads=40,
    num_key_value_heads=8,
    head_dim=128,
    hidden_size=5120,
)
# meta-llama/Llama-3.1-8B-Instruct: 32 layers, 32 heads, 8 KV heads, hidden 4096, BF16 8,030,261,248.
LLAMA_8B = ModelFacts(
    source="HuggingFace",
    name="meta-llama/Llama-3.1-8B-Instruct",
    architecture="LlamaForCausalLM",
    endpoint_types=("Chat",),
    parameter_count=8_030_261_248,
    parameter_dtype_counts={"BF16": 8_030_261_248},
    context_length=131072,
    torch_dtype="bfloat16",
    num_hidden_layers=32,
    num_attention_heads=32,
    num_key_value_heads=8,
    head_dim=128,
    hidden_size=4096,
    gated=True,
)
# meta-llama/Llama-3.1-70B-Instruct: 80 layers, 64 heads, 8 KV heads, hidden 8192, BF16 70,553,706,496.
LLAMA_70B = LLAMA_8B.model_copy(
    update={
        "name": "meta-llama/Llama-3.1-70B-Instruct",
        "parameter_count": 70_553_706_496,
        "parameter_dtype_counts": {"BF16": 70_553_706_496},
        "num_hidden_layers": 80,
        "num_attention_heads": 64,
        "hidden_size": 8192,
    }
)
# meta-llama/Llama-3.1-405B-Instruct: 126 layers, 128 heads, 8 KV heads, hidden 16384, BF16.
LLAMA_405B = LLAMA_8B.model_copy(
    update={
        "name": "meta-llama/Llama-3.1-405B-Instruct",
        "parameter_count": 405_853_388_800,
        "parameter_dtype_counts": {"BF16": 405_853_388_800},
        "num_hidden_layers": 126,
        "num_attention_heads": 128,
        "hidden_size": 16384,
    }
)
# BAAI/bge-large-en-v1.5: BertModel, 24 layers, 16 heads, hidden 1024, 512 positions, F32 335,141,888.
BGE_LARGE = ModelFacts(
    source="HuggingFace",
    name="BAAI/bge-large-en-v1.5",
    architecture="BertModel",
    endpoint_types=("Embeddings",),
    parameter_count=335_141_888,
    parameter_dtype_counts={"F32": 335_141_888},
    context_length=512,
    torch_dtype="float32",
    num_hidden_layers=24,
    num_attention_heads=16,
    num_key_value_heads=16,
    hidden_size=1024,
)
# BAAI/bge-reranker-v2-m3: XLMRobertaForSequenceClassification, 24 layers, 16 heads, hidden 1024,
# 8194 positions, F32 567,755,777.
BGE_RERANKER = ModelFacts(
    source="HuggingFace",
    name="BAAI/bge-reranker-v2-m3",
    architecture="XLMRobertaForSequenceClassification",
    endpoint_types=("Rerank",),
    parameter_count=567_755_777,
    parameter_dtype_counts={"F32": 567_755_777},
    context_length=8194,
    torch_dtype="float32",
    num_hidden_layers=24,
    num_attention_heads=16,
    num_key_value_heads=16,
    hidden_size=1024,
)
# Qwen/Qwen3-8B-FP8: 36 layers, 32 heads, 8 KV heads, head_dim 128, fp8 with 128x128 blocks.
QWEN3_8B_FP8 = ModelFacts(
    source="HuggingFace",
    name="Qwen/Qwen3-8B-FP8",
    architecture="Qwen3ForCausalLM",
    endpoint_types=("Chat",),
    quantization="fp8",
    quantization_bits=8,
    parameter_count=8_190_735_360,
    context_length=40960,
    torch_dtype="bfloat16",
    num_hidden_layers=36,
    num_attention_heads=32,
    num_key_value_heads=8,
    head_dim=128,
    hidden_size=4096,
)
# bartowski/Meta-Llama-3.1-8B-Instruct-GGUF, Q4_K_M file: 4,920,734,016 bytes.
LLAMA_8B_GGUF = LLAMA_8B.model_copy(
    update={
        "name": "bartowski/Meta-Llama-3.1-8B-Instruct-GGUF",
        "format": "GGUF",
        "quantization": "gguf",
        "quantization_bits": 4,
        "parameter_dtype_counts": {},
        "weights_bytes": 4_920_734_016,
        "files": {"Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf": 4_920_734_016},
        "gated": False,
    }
)


def make_recipe(name: str = "vllm", **spec: Any) -> InferenceRecipe:
    body: dict[str, Any] = {
        "runtime": "vLLM",
        "image": runtime_images.pinned().image,
        "endpointTypes": ["Chat", "Embeddings", "Rerank"],
        "formats": ["Safetensors"],
        "architectures": ["*"],
        "quantizations": [
            {"method": "none", "minComputeCapability": "7.0"},
            {"method": "awq", "minComputeCapability": "7.5"},
            {"method": "gptq", "minComputeCapability": "7.5"},
            {"method": "fp8", "minComputeCapability": "8.9"},
        ],
    }
    body.update(spec)
    return InferenceRecipe.model_validate({"metadata": {"name": name}, "spec": body})


def make_class(**placement: Any) -> InferenceServiceClassSpec:
    body: dict[str, Any] = {"deviceClassNames": ["gpu.nvidia.com", "mig.nvidia.com"]}
    body.update(placement)
    return InferenceServiceClassSpec.model_validate(
        {"modelPolicy": {"allowedEndpointTypes": ["Chat", "Embeddings", "Rerank"]}, "placement": body}
    )


def make_request(inventory: Inventory, facts: ModelFacts, **changes: Any) -> PlanRequest:
    fields: dict[str, Any] = {
        "facts": facts,
        "endpoint_type": facts.endpoint_types[0] if facts.endpoint_types else "Chat",
        "class_spec": make_class(),
        "recipes": [make_recipe()],
        "inventory": inventory,
        "served_model_name": facts.name,
    }
    fields.update(changes)
    return PlanRequest(**fields)


def plan(inventory: Inventory, facts: ModelFacts, **changes: Any) -> PlanOutcome:
    return plan_order(make_request(inventory, facts, **changes))


def gpu(name: str, product: str, memory: str, capability: str, **extra: Any) -> dict[str, Any]:
    attributes: dict[str, Any] = {
        "type": {"string": "gpu"},
        "uuid": {"string": f"GPU-{name}"},
        "productName": {"string": product},
        "cudaComputeCapability": {"version": capability},
    }
    device: dict[str, Any] = {
        "name": name,
        "attributes": attributes,
        "capacity": {"memory": {"value": memory}},
    }
    device.update(extra)
    return device


def mig(
    name: str, parent: str, profile: str, memory: str, product: str = "NVIDIA A100-SXM4-40GB"
) -> dict[str, Any]:
    return {
        "name": name,
        "attributes": {
            "type": {"string": "mig"},
            "uuid": {"string": f"MIG-{name}"},
            "parentUUID": {"string": f"GPU-{parent}"},
            "profile": {"string": profile},
            "productName": {"string": product},
            "cudaComputeCapability": {"version": "8.0.0"},
        },
        "capacity": {"memory": {"value": memory}},
    }


def make_slice(node: str, devices: list[dict[str, Any]], **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "driver": DRIVER,
        "nodeName": node,
        "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
        "devices": devices,
    }
    body.update(spec)
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node}-gpu"},
        "spec": body,
    }


def make_claim(
    name: str,
    namespace: str,
    keys: list[tuple[str, str, str]],
    *,
    order: str | None = None,
    devices: dict[str, Any] | None = None,
    **result: Any,
) -> dict[str, Any]:
    """An allocated claim; ``order``: its order label, ``devices``: its ``spec.devices`` (what it asks)."""
    claim: dict[str, Any] = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": namespace},
        "status": {
            "allocation": {
                "devices": {
                    "results": [
                        {"request": "gpu", "driver": d, "pool": p, "device": n, **result} for d, p, n in keys
                    ]
                }
            }
        },
    }
    if order is not None:
        claim["metadata"]["labels"] = {LABEL_ORDER: order}
    if devices is not None:
        claim["spec"] = {"devices": devices}
    return claim


def inventory_of(
    slices: list[dict[str, Any]],
    claims: list[dict[str, Any]] | None = None,
    *,
    own_claim_prefix: str | None = None,
    own_claims: list[str] | None = None,
    namespace: str | None = None,
    classes: list[dict[str, Any]] | None = None,
) -> Inventory:
    inv = build_inventory(
        resource_slices=slices,
        device_classes=classes if classes is not None else [GPU_CLASS, MIG_CLASS],
        resource_claims=claims or [],
        own_claim_prefix=own_claim_prefix,
        own_claims=own_claims or (),
        namespace=namespace,
    )
    assert isinstance(inv, Inventory), inv
    return inv


def small_fleet() -> list[dict[str, Any]]:
    """4 x H100 80GB on one node, two L4 nodes, and an A100 40GB with MIG devices."""
    return [
        make_slice("h100-0", [gpu(f"gpu-{i}", "NVIDIA H100 80GB HBM3", "80Gi", "9.0.0") for i in range(4)]),
        make_slice("l4-0", [gpu("gpu-0", "NVIDIA L4", "24Gi", "8.9.0")]),
        make_slice("l4-1", [gpu("gpu-0", "NVIDIA L4", "24Gi", "8.9.0")]),
        make_slice(
            "a100-0",
            [
                gpu("gpu-0", "NVIDIA A100-SXM4-40GB", "40Gi", "8.0.0"),
                mig("gpu-0-mig-3g", "gpu-0", "3g.20gb", "20Gi"),
                mig("gpu-0-mig-1g", "gpu-0", "1g.5gb", "5Gi"),
            ],
        ),
    ]


def fleet_objects() -> list[dict[str, Any]]:
    """The default fleet of the local control plane (Nodes, ResourceSlices, DeviceClasses)."""
    return default_fleet()


def fleet_inventory(claims: list[dict[str, Any]] | None = None, **kwargs: Any) -> Inventory:
    objects = fleet_objects()
    slices = [o for o in objects if o.get("kind") == "ResourceSlice"]
    classes = [o for o in objects if o.get("kind") == "DeviceClass"]
    return inventory_of(slices, claims, classes=classes, **kwargs)
