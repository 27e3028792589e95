"""The multi-node planner against published deployments of models larger than one node.

Each row is a layout somebody published for the model on that hardware, with its source; the
planner, given a fleet of exactly those nodes and a class allowing enough nodes, must choose the
same layout (nodes x devices per node, or one node when one node is enough). The facts are the
real repositories' (the Hub mirror's config and safetensors headers, through model_facts).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

import pytest

from controller.model_facts.facts import ModelFacts
from controller.planner import PlanOutcome
from controller.planner.estimate import estimate_memory
from controller.planner.multinode import stage_fraction
from controller.planner.plan import LaunchPlan
from shared import reasons
from testkit.mirror_facts import facts_of
from testkit.planner import gpu, inventory_of, make_claim, make_class, make_slice, plan

H100 = ("NVIDIA H100 80GB HBM3", "80Gi", "9.0.0")
H200 = ("NVIDIA H200", "141Gi", "9.0.0")
L4 = ("NVIDIA L4", "24Gi", "8.9.0")
LLAMA_405B = "meta-llama/Llama-3.1-405B-Instruct"
DEEPSEEK_V3 = "deepseek-ai/DeepSeek-V3"


@cache
def facts(repo_id: str) -> ModelFacts:
    return facts_of(repo_id)  # type: ignore[no-any-return]


def fleet(nodes: int, device: tuple[str, str, str], per_node: int = 8) -> list[dict[str, Any]]:
    product, memory, capability = device
    return [
        make_slice(f"node-{i}", [gpu(f"gpu-{j}", product, memory, capability) for j in range(per_node)])
        for i in range(nodes)
    ]


def plan_on(repo_id: str, slices: list[dict[str, Any]], max_nodes: int = 4, **changes: Any) -> PlanOutcome:
    spec = make_class(deviceClassNames=["gpu.nvidia.com"], maxNodesPerReplica=max_nodes)
    return plan(
        inventory_of(slices, **changes.pop("inventory", {})), facts(repo_id), class_spec=spec, **changes
    )


@dataclass(frozen=True)
class Published:
    what: str
    repo_id: str
    nodes: int
    device: tuple[str, str, str]
    layout: tuple[int, int]  # (nodes, devices per node) of one replica
    source: str


ROWS = [
    Published(
        "Llama 3.1 405B BF16 on two 8 x H100 nodes: TP 8 x PP 2",
        LLAMA_405B,
        2,
        H100,
        (2, 8),
        "vLLM examples/online_serving/multi-node-serving.sh, its usage line: vllm serve "
        "meta-llama/Meta-Llama-3.1-405B-Instruct --tensor-parallel-size 8 --pipeline_parallel_size 2; "
        "vLLM blog, Announcing Llama 3.1 Support in vLLM (2024-07-23): BF16 405B on multiple nodes, "
        "pipeline parallel",
    ),
    Published(
        "Llama 3.1 405B BF16 on one 8 x H200 node: TP 8, no second node",
        LLAMA_405B,
        1,
        H200,
        (1, 8),
        "vLLM blog (2024-07-23): the model runs on a single 8xMI300x or 8xH200 machine",
    ),
    Published(
        "DeepSeek-V3 (FP8, 671B) on two 8 x H100 nodes: TP 8 x PP 2",
        DEEPSEEK_V3,
        2,
        H100,
        (2, 8),
        "about 685 GB of FP8 weights exceed one 8xH100 node's 640 GB "
        "(dzhsurf/deepseek-v3-r1-deploy-and-benchmarks); DeepSeek-V3 README, vLLM: pipeline "
        "parallelism across machines; vLLM distributed serving docs: TP within a node, PP across",
    ),
    Published(
        "DeepSeek-V3 (FP8) on one 8 x H200 node",
        DEEPSEEK_V3,
        1,
        H200,
        (1, 8),
        "vLLM recipes, DeepSeek-V3/R1: 8xH200 with native FP8, TP 8",
    ),
]


def layout(p: LaunchPlan) -> tuple[int, int]:
    return (p.node_count, p.devices_per_pod)


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.what)
def test_the_planner_chooses_the_published_layout(row: Published) -> None:
    out = plan_on(row.repo_id, fleet(row.nodes, row.device))
    assert out.ok, out.message
    assert out.plan is not None
    assert layout(out.plan) == row.layout, out.message
    assert out.plan.placement_mode == ("MultiNode" if row.layout[0] > 1 else "TensorParallel")
    assert out.plan.accelerator_count == row.layout[0] * row.layout[1]
    assert len(out.allocation) == out.plan.accelerator_count
    if row.layout[0] > 1:
        args = out.plan.args
        assert args[args.index("--tensor-parallel-size") + 1] == str(row.layout[1])
        assert args[args.index("--pipeline-parallel-size") + 1] == str(row.layout[0])
        assert args[args.index("--distributed-executor-backend") + 1] == "ray"
        assert f"{row.layout[0]} nodes x {row.layout[1]} x {row.device[0]}" in out.message


def test_deepseek_v3_caches_one_mla_latent_per_token_and_layer() -> None:
    """DeepSeek-V2 paper (arXiv 2405.04434) Table 1: MLA caches (d_c + d_h^R) x layers elements per
    token; V3: kv_lora_rank 512 + qk_rope_head_dim 64 = 576, 61 layers, BF16 cache."""
    f = facts(DEEPSEEK_V3)
    assert (f.num_key_value_heads, f.head_dim, f.kv_latent) == (1, 576, True)
    assert estimate_memory(f).kv_bytes_per_token == 61 * 576 * 2


def test_the_405b_plan_splits_the_126_layers_in_two_stages_and_sizes_each_pod() -> None:
    out = plan_on(LLAMA_405B, fleet(2, H100))
    assert out.plan is not None
    assert stage_fraction(126, 2) == 0.5
    assert out.plan.cpu == "18"  # per pod: 2 + 2 per device of the node
    assert {k[1] for k in out.allocation} == {"node-0", "node-1"}  # the pools are the nodes


def test_one_node_class_keeps_todays_refusal() -> None:
    out = plan_on(LLAMA_405B, fleet(2, H100), max_nodes=1)
    assert out.reason == reasons.NO_ACCELERATOR_WITH_ENOUGH_MEMORY
    assert "up to 8 on one node: 640 GiB" in out.message


def test_the_smallest_total_wins_then_the_fewest_nodes() -> None:
    # Four H100 nodes: 3 nodes x 4 (12 devices) holds 405B BF16 and takes less than 2 x 8.
    out = plan_on(LLAMA_405B, fleet(4, H100))
    assert out.plan is not None and layout(out.plan) == (3, 4)
    # With at most two nodes, 2 x 8 (4 x 4 would take as many devices on more nodes).
    out = plan_on(LLAMA_405B, fleet(4, H100), max_nodes=2)
    assert out.plan is not None and layout(out.plan) == (2, 8)


def test_a_model_one_node_holds_is_never_spread_even_when_that_node_is_busy() -> None:
    h200 = make_slice("h200-0", [gpu(f"gpu-{j}", *H200) for j in range(8)])
    busy = make_claim("other", "ns", [("gpu.nvidia.com", "h200-0", f"gpu-{i}") for i in range(8)])
    out = plan_on(LLAMA_405B, [h200, *fleet(2, H100)], inventory={"claims": [busy]})
    assert out.reason == reasons.NO_CAPACITY, out.message
    assert "nodes" not in out.message


def test_not_enough_free_nodes_is_no_capacity_naming_the_nodes() -> None:
    busy = make_claim("other", "ns", [("gpu.nvidia.com", "node-1", "gpu-0")])
    out = plan_on(LLAMA_405B, fleet(2, H100), inventory={"claims": [busy]})
    assert out.reason == reasons.NO_CAPACITY
    assert "2 nodes x 8 x NVIDIA H100 80GB HBM3 would hold it" in out.message
    assert "2 such nodes exist" in out.message


def test_too_few_nodes_names_how_many_it_would_need_and_how_many_exist() -> None:
    out = plan_on(LLAMA_405B, fleet(2, L4), max_nodes=2)
    assert out.reason == reasons.NO_ACCELERATOR_WITH_ENOUGH_MEMORY
    assert "it would need 8 nodes x 8 x NVIDIA L4" in out.message
    assert "up to 2 nodes per replica" in out.message
    assert "2 such nodes exist" in out.message


def test_a_multinode_plan_in_force_stays_on_the_devices_it_holds() -> None:
    slices = fleet(3, H100)
    first = plan_on(LLAMA_405B, slices)
    assert first.plan is not None
    held = make_claim("big-gpu-x", "ns", list(first.allocation))
    again = plan_on(
        LLAMA_405B,
        slices,
        previous=first.plan,
        inventory={"claims": [held], "own_claims": ["big-gpu-x"], "namespace": "ns"},
    )
    assert again.ok and again.plan is not None
    assert set(again.allocation) == set(first.allocation)


def test_only_mig_devices_leave_the_single_node_diagnosis() -> None:
    migs = [
        make_slice(
            f"a100-{i}",
            [
                {
                    **gpu("gpu-0-mig", "NVIDIA A100-SXM4-40GB", "20Gi", "8.0.0"),
                    "attributes": {
                        "type": {"string": "mig"},
                        "uuid": {"string": f"MIG-{i}"},
                        "productName": {"string": "NVIDIA A100-SXM4-40GB"},
                        "cudaComputeCapability": {"version": "8.0.0"},
                        "profile": {"string": "3g.20gb"},
                    },
                }
            ],
        )
        for i in range(2)
    ]
    spec = make_class(
        deviceClassNames=["mig.nvidia.com"], sharingModes=["Exclusive", "MIG"], maxNodesPerReplica=4
    )
    out = plan(inventory_of(migs), facts(LLAMA_405B), class_spec=spec)
    assert out.reason == reasons.NO_ACCELERATOR_WITH_ENOUGH_MEMORY
    assert "nodes x" not in out.message
