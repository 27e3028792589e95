"""From facts to the rendered fetcher and PVC: the plan's volume holds the selected files, the fetcher
downloads them (from the catalog's source location for a catalog order), and a catalog order is
planned with the head count its status carries."""

from __future__ import annotations

from typing import Any

from controller import render
from controller.conditions import resolve
from controller.model_facts.facts import ModelFacts
from controller.model_facts.files import total_bytes
from controller.render.fetch import cli_patterns
from controller.render.fetcher_program import patterns
from shared import names
from shared import reasons as r
from shared.quantity import parse_bytes
from testkit.planner import gpu as gpu_device
from testkit.planner import inventory_of, make_slice, plan, small_fleet
from tests.unit.controller.builders import make_class, make_order
from tests.unit.controller.test_render import SETTINGS
from tests.unit.test_model_files import FACTS

LLAMA_8B = "meta-llama/Llama-3.1-8B-Instruct"
LLAMA_70B = "meta-llama/Llama-3.1-70B-Instruct"


def rendered(facts: ModelFacts, order: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    outcome = plan(inventory_of(small_fleet()), facts)
    assert outcome.ok and outcome.plan is not None, outcome.message
    fetch = render.fetch_spec(facts, facts.revision)
    objs = render.workload(
        order, outcome.plan, make_class().spec, SETTINGS, revision=facts.revision, fetch=fetch
    )
    by_kind = {o["kind"]: o for o in objs}
    return by_kind["PersistentVolumeClaim"], by_kind["Deployment"]


def fetcher_args(deployment: dict[str, Any]) -> list[str]:
    fetcher = next(
        c
        for c in deployment["spec"]["template"]["spec"]["initContainers"]
        if c["name"] == names.FETCHER_CONTAINER
    )
    args: list[str] = fetcher["args"]
    return args


def includes(args: list[str]) -> list[str]:
    """The file patterns of the fetcher's ``hf download`` (as its progress wrapper reads them)."""
    return patterns(["hf", *args])


def test_the_pvc_request_is_at_least_the_selected_files() -> None:
    for rid in (LLAMA_8B, "Qwen/Qwen2.5-7B-Instruct", "mistralai/Mistral-7B-Instruct-v0.3"):
        facts = FACTS[rid]
        pvc, dep = rendered(facts, make_order())
        request = parse_bytes(pvc["spec"]["resources"]["requests"]["storage"])
        assert request >= (total_bytes(facts.files) or 0) * 1.1, rid
        include = render.fetch_spec(facts, facts.revision).include
        assert includes(fetcher_args(dep)) == cli_patterns(include) == list(include)
        assert "--include" not in fetcher_args(dep)
        assert pvc["metadata"]["name"] in str(dep["spec"]["template"]["spec"]["volumes"])


def test_the_fetcher_downloads_the_hub_repo_at_the_resolved_commit() -> None:
    facts = FACTS[LLAMA_8B]
    _, dep = rendered(facts, make_order())
    args = fetcher_args(dep)
    assert args[:2] == ["download", LLAMA_8B]
    assert args[args.index("--revision") + 1] == facts.revision
    assert args[args.index("--local-dir") + 1] == "/models/model"
    assert args[2 : args.index("--local-dir")] == includes(args)  # positional patterns, then the options
    assert not [p for p in includes(args) if "original" in p or "consolidated" in p or p.endswith(".pth")]


def test_the_fetcher_runs_hf_under_the_progress_wrapper_and_serves_the_selected_total() -> None:
    facts = FACTS[LLAMA_8B]
    _, dep = rendered(facts, make_order())
    fetcher = next(
        c for c in dep["spec"]["template"]["spec"]["initContainers"] if c["name"] == names.FETCHER_CONTAINER
    )
    python, flag, program, hf = fetcher["command"]
    assert (python, flag, hf) == ("python3", "-c", "hf")
    assert "model_fetcher_bytes_done" in program and "import huggingface_hub" not in program
    compile(program, "fetcher_program", "exec")  # the source the container runs is a whole program
    env = {e["name"]: e.get("value") for e in fetcher["env"]}
    assert env["MODEL_FETCHER_BYTES_TOTAL"] == str(total_bytes(facts.files))
    assert env["MODEL_FETCHER_METRICS_PORT"] == "9090"
    assert fetcher["ports"] == [{"name": "fetch-metrics", "containerPort": 9090, "protocol": "TCP"}]
    # a catalog model without a listing: the total is unknown, and the fetcher says 0
    _, dep = rendered(facts.model_copy(update={"files": {}}), make_order())
    fetcher = next(
        c for c in dep["spec"]["template"]["spec"]["initContainers"] if c["name"] == names.FETCHER_CONTAINER
    )
    assert {e["name"]: e.get("value") for e in fetcher["env"]}["MODEL_FETCHER_BYTES_TOTAL"] == "0"


def catalog_object(**resolved: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "llama-70b"},
        "status": {
            "phase": "Ready",
            "resolved": {
                "supportedEndpointTypes": ["Chat"],
                "format": "Safetensors",
                "parameterCount": 70_553_706_496,
                "architecture": "LlamaForCausalLM",
                "contextWindowTokens": 131072,
                **resolved,
            },
            "source": {"uri": f"hf://{LLAMA_70B}", "revision": "0123abc"},
        },
    }


HEADS = {
    "numAttentionHeads": 64,
    "numKeyValueHeads": 8,
    "numHiddenLayers": 80,
    "hiddenSize": 8192,
    "torchDtype": "bfloat16",
}


def test_a_catalog_model_carries_its_heads_layers_and_source() -> None:
    v, facts = resolve.catalog_facts("llama-70b", "ClusterModel", catalog_object(**HEADS))
    assert v.ok and facts is not None
    assert (facts.num_attention_heads, facts.num_key_value_heads, facts.num_hidden_layers) == (64, 8, 80)
    assert (facts.head_dim, facts.torch_dtype, facts.source_uri) == (128, "bfloat16", f"hf://{LLAMA_70B}")


def test_a_catalog_order_is_planned_tensor_parallel_with_its_real_head_count() -> None:
    """70B in BF16 needs more than one 80 GB device: tensor parallel, which the head count allows."""
    fleet = [
        make_slice(
            "h100-0", [gpu_device(f"gpu-{i}", "NVIDIA H100 80GB HBM3", "80Gi", "9.0.0") for i in range(4)]
        )
    ]
    _, with_heads = resolve.catalog_facts("llama-70b", "ClusterModel", catalog_object(**HEADS))
    _, without = resolve.catalog_facts("llama-70b", "ClusterModel", catalog_object())
    assert with_heads is not None and without is not None
    planned = plan(inventory_of(fleet), with_heads)
    assert planned.ok and planned.plan is not None and planned.plan.accelerator_count in (2, 4)
    assert not plan(inventory_of(fleet), without).ok  # heads unknown: one device only, and 70B does not fit


def test_a_catalog_order_fetches_the_catalogs_location_not_its_own_name() -> None:
    _, facts = resolve.catalog_facts("llama-70b", "ClusterModel", catalog_object(**HEADS))
    assert facts is not None
    order = make_order(spec={"model": {"src": "Catalog", "ref": {"name": "llama-70b"}}})
    fleet = [
        make_slice(
            "h100-0", [gpu_device(f"gpu-{i}", "NVIDIA H100 80GB HBM3", "80Gi", "9.0.0") for i in range(4)]
        )
    ]
    outcome = plan(inventory_of(fleet), facts)
    assert outcome.plan is not None
    fetch = render.fetch_spec(facts, facts.revision)
    dep = render.deployment(
        order, outcome.plan, make_class().spec, SETTINGS, revision=facts.revision, fetch=fetch
    )
    args = fetcher_args(dep)
    assert args[:2] == ["download", LLAMA_70B]
    assert args[args.index("--revision") + 1] == "0123abc"
    assert "model*.safetensors" in includes(args)


def test_a_catalog_model_outside_a_hub_is_not_ready_with_the_reason() -> None:
    obj = catalog_object(**HEADS)
    obj["status"]["source"] = {"uri": "s3://bucket/llama"}
    v, facts = resolve.catalog_facts("llama-70b", "ClusterModel", obj)
    assert (v.reason, facts) == (r.MODEL_NOT_READY, None)
    assert "s3://bucket/llama" in v.message and "hf://" in v.message
    del obj["status"]["source"]
    v, _ = resolve.catalog_facts("llama-70b", "ClusterModel", obj)
    assert v.reason == r.MODEL_NOT_READY and "status.source.uri" in v.message
