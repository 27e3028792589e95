"""The pure parts of bench/chaos and bench/fuzz: the churn plan and the fuzz generator and judge."""

from __future__ import annotations

import ast
import itertools
import pathlib
from typing import Any

import pytest

from bench.chaos.churn import SERVED, expected, plan
from bench.chaos.faults import Schedule
from bench.fuzz import contract
from bench.fuzz.gen import Generator
from bench.fuzz.judge import contract_refusals, outcome_of
from controller.kube.errors import ApiUnavailable, Invalid
from shared import runtime_images
from webhook.validate_class import class_problems
from webhook.validate_order import order_name_problems, order_problems
from webhook.validate_recipe import recipe_problems


def test_the_same_seed_plans_the_same_churn_within_its_bounds() -> None:
    ops = plan(5, 300, namespaces=3, creates=30, max_live=12)
    assert ops == plan(5, 300, namespaces=3, creates=30, max_live=12)
    assert sum(op.verb == "create" for op in ops) == 30
    assert {op.verb for op in ops} == {"create", "edit", "delete"}
    assert ops[-1].at <= 0.75 * 300
    live: set[str] = set()
    for op in ops:
        if op.verb == "create":
            assert op.key not in live
            live.add(op.key)
        else:
            assert op.key in live
            if op.verb == "delete":
                live.remove(op.key)
        assert len(live) <= 12
    assert set(expected(ops)) == live


def test_the_full_schedule_has_one_of_each_fault_and_kills_every_20_to_40_seconds() -> None:
    events = Schedule.full(300).events(1)
    whats = [w for _, w in events]
    for one in ("apiserver", "etcd", "webhook", "hub", "hub_back"):
        assert whats.count(one) == 1
    kills = [t for t, w in events if w == "kill"]
    assert len(kills) >= 5
    assert all(20 <= b - a <= 40 for a, b in itertools.pairwise(kills))


def test_the_fuzz_generator_is_seeded_and_its_valid_cases_pass_the_contract() -> None:
    a, b = Generator(2, ["n"], "l"), Generator(2, ["n"], "l")
    cases = [a.case(i) for i in range(400)]
    assert cases == [b.case(i) for i in range(400)]
    valid = [c for c in cases if c.valid]
    assert len(valid) > 100
    assert all(contract_refusals(c.kind, c.obj) == [] for c in valid)
    broken = [c for c in cases if not c.valid]
    assert sum(bool(contract_refusals(c.kind, c.obj)) for c in broken) > 0.8 * len(broken)
    assert {c.kind for c in cases} == {"InferenceService", "InferenceServiceClass", "InferenceRecipe"}


def test_the_contract_judge_reads_no_webhook_or_api_model_code() -> None:
    """It derives its verdict from deploy/crds and the documents, so a webhook bug cannot hide in it."""
    tree = ast.parse(pathlib.Path(contract.__file__).read_text())
    imported = {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    imported |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert not {m for m in imported if m.split(".")[0] in ("webhook", "shared", "controller")}


def hf_order(name: str = "qwen", repo: str = "Qwen/Qwen2.5-0.5B-Instruct", **ref: str) -> dict[str, Any]:
    return {
        "apiVersion": "ai.deckhouse.io/v1alpha1",
        "kind": "InferenceService",
        "metadata": {"name": name, "namespace": "n"},
        "spec": {
            "inferenceServiceClassName": "default-llm",
            "model": {"src": "HuggingFace", "ref": {"name": repo, **ref}},
        },
    }


def a_class(**placement: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "modelPolicy": {"allowedEndpointTypes": ["Chat"]},
        "placement": {"deviceClassNames": ["gpu.nvidia.com"], **placement},
    }
    if "scaling" in placement:
        spec["scaling"] = placement.pop("scaling")
    return {
        "apiVersion": "ai.deckhouse.io/v1alpha1",
        "kind": "InferenceServiceClass",
        "metadata": {"name": "c"},
        "spec": spec,
    }


def a_recipe(**spec: Any) -> dict[str, Any]:
    body = {
        "runtime": "vLLM",
        "image": runtime_images.pinned().image,
        "endpointTypes": ["Chat"],
        "formats": ["Safetensors"],
    }
    return {
        "apiVersion": "ai.deckhouse.io/v1alpha1",
        "kind": "InferenceRecipe",
        "metadata": {"name": "r"},
        "spec": {**body, **spec},
    }


REVIEWS = {
    "InferenceService": lambda o: order_problems(o) + order_name_problems(o),
    "InferenceServiceClass": class_problems,
    "InferenceRecipe": recipe_problems,
}
DOCUMENTED = [
    (hf_order(kind="Model"), "CRD rule: no ref.kind with HuggingFace"),
    (hf_order(name="8b-chat"), "the order's Service takes its name: a DNS-1035 label"),
    (hf_order(revision="main..x"), "git check-ref-format"),
    (hf_order(repo="Qwen/Qwen2.5--0.5B"), "the Hub's repo id rules"),
    (a_class(selector="(("), "admin-guide: a selector that does not compile"),
    (a_class(maxNodesPerReplica=2, sharingModes=["MIG"]), "admin-guide: multi-node needs Exclusive"),
    (a_class(tolerations=[{"key": "k", "operator": "Exists", "value": "v"}]), "core/v1 Toleration"),
    (a_class(scaling={"minReplicas": 3, "maxReplicas": 2}), "an HPA's min above its max"),
    (
        a_class(scaling={"metric": "KVCacheUtilization", "target": 101}),
        "CRD rule: a KV cache target is a percent",
    ),
    (a_recipe(image="Vllm/VLLM"), "a container image reference"),
    (a_recipe(architectures=["1abc"]), "admin-guide: architecture names"),
]


@pytest.mark.parametrize(("obj", "why"), DOCUMENTED, ids=[why for _, why in DOCUMENTED])
def test_what_the_documents_refuse_the_contract_and_the_webhook_refuse(obj: dict[str, Any], why: str) -> None:
    kind = obj["kind"]
    assert contract_refusals(kind, obj), why
    assert contract.schema_problems(contract.schema_of(kind), obj, "") or REVIEWS[kind](obj), why


def test_the_plain_objects_of_that_table_pass_both() -> None:
    for obj in (hf_order(), a_class(), a_recipe()):
        assert contract_refusals(obj["kind"], obj) == []
        assert REVIEWS[obj["kind"]](obj) == []


def test_every_object_the_contract_refuses_is_refused_by_the_schema_or_the_webhook() -> None:
    """The webhook checked against the independent contract: what the documents promise to refuse
    beyond the schema, the webhook refuses (it may refuse more)."""
    gen = Generator(3, ["n"], "l")
    missed = []
    for i in range(1500):
        case = gen.case(i)
        documented = contract.RULES[case.kind](case.obj)
        by_schema = contract.schema_problems(contract.schema_of(case.kind), case.obj, "")
        webhook = REVIEWS[case.kind](case.obj)
        if documented and not by_schema and not webhook:
            missed.append((case.kind, case.mutations, documented))
    assert missed == []


def test_the_answers_are_told_apart() -> None:
    assert outcome_of(Invalid("spec.x: Invalid value", status=422)) == "refused_by_schema"
    denied = 'admission webhook "validate.inferenceservices.ai.deckhouse.io" denied the request: x'
    assert outcome_of(Invalid(denied, status=422)) == "refused_by_webhook"
    assert outcome_of(ApiUnavailable('failed calling webhook "x": connection refused', status=500)) == (
        "webhook_unreachable_or_5xx"
    )
    assert outcome_of(ApiUnavailable("no answer", status=0)) == "api_unavailable"
    assert SERVED
