"""The CRDs are generated from the pydantic models, and carry every field of api.md."""

from __future__ import annotations

import pathlib
from typing import Any

import pytest
import yaml

from bench.fuzz import contract
from devtools.crdgen import crds

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name", sorted(crds()))
def test_the_committed_crd_is_what_the_models_generate(name: str) -> None:
    committed = list(yaml.safe_load_all((ROOT / "deploy" / "crds" / name).read_text()))
    assert committed == [crds()[name]], f"deploy/crds/{name} is stale: run `make crds`"


def _paths(schema: dict[str, Any], prefix: str = "") -> dict[str, dict[str, Any]]:
    out = {}
    for key, sub in (schema.get("properties") or {}).items():
        path = f"{prefix}.{key}" if prefix else key
        out[path] = sub
        out.update(_paths(sub, path))
        if "items" in sub:
            out.update(_paths(sub["items"], path + "[]"))
    return out


def _schema(name: str) -> dict[str, Any]:
    schema: dict[str, Any] = crds()[name]["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return schema


ORDER_FIELDS = [
    "spec.inferenceServiceClassName",
    "spec.model",
    "spec.model.src",
    "spec.model.ref",
    "spec.model.ref.name",
    "spec.model.ref.revision",
    "spec.model.ref.kind",
    "spec.model.authSecretRef",
    "spec.model.authSecretRef.name",
    "spec.model.authSecretRef.key",
    "status.observedGeneration",
    "status.phase",
    "status.conditions",
    "status.endpoint",
    "status.endpoint.url",
    "status.endpoint.type",
    "status.authSecretName",
    "status.model.endpointType",
    "status.model.architecture",
    "status.model.format",
    "status.model.quantization",
    "status.model.parameterCount",
    "status.model.contextLength",
    "status.model.revision",
    "status.constraints.minReplicas",
    "status.constraints.maxReplicas",
    "status.constraints.priorityClassName",
    "status.constraints.metric",
    "status.constraints.target",
    "status.resolved.deviceClass",
    "status.resolved.acceleratorProductName",
    "status.resolved.acceleratorMemoryGiB",
    "status.resolved.acceleratorCount",
    "status.resolved.placementMode",
    "status.resolved.sharingMode",
    "status.resolved.sharePercent",
    "status.resolved.cpu",
    "status.resolved.memory",
    "status.resolved.modelVolume",
    "status.resolved.recipe",
    "status.resolved.replanCount",
]

CLASS_FIELDS = [
    "spec.modelPolicy.allowedEndpointTypes",
    "spec.modelPolicy.allowedSources",
    "spec.modelPolicy.allowedFormats",
    "spec.modelPolicy.parameterCount.min",
    "spec.modelPolicy.parameterCount.max",
    "spec.placement.deviceClassNames",
    "spec.placement.selector",
    "spec.placement.sharingModes",
    "spec.placement.maxAcceleratorsPerReplica",
    "spec.scaling.minReplicas",
    "spec.scaling.maxReplicas",
    "spec.scaling.priorityClassName",
    "spec.scaling.metric",
    "spec.scaling.target",
    "spec.scaling.scaleDownStabilizationSeconds",
    "spec.exposure.type",
    "spec.exposure.authentication",
    "spec.recipes",
    "status.conditions",
]

RECIPE_FIELDS = [
    "spec.runtime",
    "spec.image",
    "spec.endpointTypes",
    "spec.formats",
    "spec.architectures",
    "spec.quantizations",
    "spec.quantizations[].method",
    "spec.quantizations[].minComputeCapability",
    "spec.extraArgs",
]


@pytest.mark.parametrize(
    ("crd", "fields"),
    [
        ("inferenceservices.yaml", ORDER_FIELDS),
        ("inferenceserviceclasses.yaml", CLASS_FIELDS),
        ("inferencerecipes.yaml", RECIPE_FIELDS),
    ],
)
def test_every_api_md_field_is_in_the_crd_with_a_description(crd: str, fields: list[str]) -> None:
    paths = _paths(_schema(crd))
    missing = [f for f in fields if f not in paths]
    assert not missing, f"{crd} lacks {missing}"
    undocumented = [
        p
        for p, s in paths.items()
        if not s.get("description") and p not in ("apiVersion", "kind", "metadata")
    ]
    assert not undocumented, f"{crd}: fields without a description for kubectl explain: {undocumented}"


def test_the_order_spec_has_exactly_two_fields_and_no_room_for_unknown_ones() -> None:
    spec = _schema("inferenceservices.yaml")["properties"]["spec"]
    assert sorted(spec["properties"]) == ["inferenceServiceClassName", "model"]
    assert sorted(spec["required"]) == ["inferenceServiceClassName", "model"]
    assert "x-kubernetes-preserve-unknown-fields" not in spec


def test_the_union_is_enforced_by_the_schema_with_plain_messages() -> None:
    model = _schema("inferenceservices.yaml")["properties"]["spec"]["properties"]["model"]
    messages = [rule["message"] for rule in model["x-kubernetes-validations"]]
    assert "`spec.model.ref.kind`: must not be set when `spec.model.src` is `HuggingFace`" in messages
    assert any("authSecretRef" in m and "Catalog" in m for m in messages)
    assert any("revision" in m and "Catalog" in m for m in messages)


def test_printer_columns_show_class_model_type_phase_reason_url_age() -> None:
    cols = [
        c["name"] for c in crds()["inferenceservices.yaml"]["spec"]["versions"][0]["additionalPrinterColumns"]
    ]
    assert [c for c in cols if c != "Accelerator"] == [
        "Class",
        "Model",
        "Type",
        "Phase",
        "Reason",
        "URL",
        "Age",
    ]


def _scaling_problems(scaling: dict[str, Any]) -> list[str]:
    """What the committed class CRD (its schema and CEL rules, evaluated with celpy) says of a
    ``spec.scaling`` block."""
    schema = _schema("inferenceserviceclasses.yaml")["properties"]["spec"]["properties"]["scaling"]
    return contract.schema_problems(schema, scaling, "spec.scaling")


@pytest.mark.parametrize(
    ("scaling", "problem"),
    [
        pytest.param(
            {"metric": "KVCacheUtilization", "target": 101}, "`spec.scaling.target`", id="KV above 100"
        ),
        pytest.param({"metric": "CPU"}, "spec.scaling.metric", id="an unknown metric"),
        pytest.param({"target": 0}, "spec.scaling.target", id="a target of 0"),
        pytest.param(
            {"scaleDownStabilizationSeconds": -1}, "scaleDownStabilizationSeconds", id="a negative window"
        ),
        pytest.param(
            {"scaleDownStabilizationSeconds": 3601}, "scaleDownStabilizationSeconds", id="over an hour"
        ),
    ],
)
def test_the_class_schema_refuses_a_scaling_policy_out_of_range(
    scaling: dict[str, Any], problem: str
) -> None:
    problems = _scaling_problems(scaling)
    assert problems and problem in problems[0], problems


@pytest.mark.parametrize(
    "scaling",
    [
        pytest.param({"metric": "KVCacheUtilization", "target": 100}, id="KV at 100"),
        pytest.param({"metric": "QueueDepth", "target": 101}, id="a queue depth above 100"),
        pytest.param({"target": 500}, id="a target above 100 with the default metric"),
        pytest.param({"metric": "KVCacheUtilization"}, id="KV with the default target"),
        pytest.param(
            {"metric": "RunningRequests", "target": 1, "scaleDownStabilizationSeconds": 0}, id="smallest"
        ),
        pytest.param({"scaleDownStabilizationSeconds": 3600}, id="an hour"),
    ],
)
def test_the_class_schema_accepts_a_scaling_policy_in_range(scaling: dict[str, Any]) -> None:
    assert _scaling_problems(scaling) == []


def test_the_kv_cache_rule_names_the_field_in_its_message_and_path() -> None:
    schema = _schema("inferenceserviceclasses.yaml")["properties"]["spec"]["properties"]["scaling"]
    rule, _ = schema["x-kubernetes-validations"]
    assert rule["message"].startswith("`spec.scaling.target`: must be at most 100")
    assert rule["fieldPath"] == ".target"
