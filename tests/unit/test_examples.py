"""Every example, and the bundled class and recipe, is a valid object of our API.

Each manifest is read by the pydantic model of its kind and written back: what comes back must be
exactly what the file says, so a misspelt or unknown field (which the API server would prune) fails
here. The server-side dry run against the real CRDs is in tests/integration/test_deploy.py.
"""

from __future__ import annotations

import pathlib
from typing import Any

import pytest
import yaml

from controller.config.settings import _KEYS as SETTINGS_KEYS
from controller.config.settings import parse_settings
from shared.api.base import ApiModel
from shared.api.inference_class import InferenceServiceClass
from shared.api.order import InferenceService
from shared.api.recipe import InferenceRecipe

ROOT = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
PLATFORM = ROOT / "deploy" / "base" / "platform"
MODELS: dict[str, type[ApiModel]] = {
    "InferenceService": InferenceService,
    "InferenceServiceClass": InferenceServiceClass,
    "InferenceRecipe": InferenceRecipe,
}


def documents(path: pathlib.Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def api_objects(*paths: pathlib.Path) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for path in paths:
        for doc in documents(path):
            if doc.get("apiVersion") == "ai.deckhouse.io/v1alpha1":
                out.append((f"{path.name}:{doc['kind']}/{doc['metadata']['name']}", doc))
    return out


EXAMPLE_FILES = sorted(EXAMPLES.glob("*.yaml"))
ALL_OBJECTS = api_objects(*EXAMPLE_FILES, *sorted(PLATFORM.glob("*.yaml")))
ORDERS = [(i, d) for i, d in ALL_OBJECTS if d["kind"] == "InferenceService"]
CLASSES = [(i, d) for i, d in ALL_OBJECTS if d["kind"] == "InferenceServiceClass"]


def test_the_examples_cover_every_case_the_issue_asks_for() -> None:
    orders = [d for _, d in ORDERS]
    endpoint_models = {
        "Chat": "Qwen/Qwen2.5-7B-Instruct",
        "Embeddings": "BAAI/bge-large-en-v1.5",
        "Rerank": "BAAI/bge-reranker-v2-m3",
    }
    names = {o["spec"]["model"]["ref"]["name"] for o in orders}
    assert set(endpoint_models.values()) <= names
    assert any("authSecretRef" in o["spec"]["model"] for o in orders), "a gated model with a token"
    assert any(o["spec"]["model"]["src"] == "Catalog" for o in orders), "a catalog model"
    assert any(d["spec"]["exposure"] == {"type": "External", "authentication": "None"} for _, d in CLASSES), (
        "a class with External exposure and no auth"
    )


def test_the_guide_order_is_in_namespace_support_under_the_bundled_class() -> None:
    (doc,) = documents(EXAMPLES / "support-llm.yaml")
    assert doc["metadata"] == {"name": "support-llm", "namespace": "support"}
    assert doc["spec"] == {
        "inferenceServiceClassName": "default-llm",
        "model": {"ref": {"name": "Qwen/Qwen2.5-32B-Instruct-AWQ"}, "src": "HuggingFace"},
    }


@pytest.mark.parametrize(("where", "doc"), ALL_OBJECTS, ids=[i for i, _ in ALL_OBJECTS])
def test_a_manifest_reads_back_exactly_as_written(where: str, doc: dict[str, Any]) -> None:
    model = MODELS[doc["kind"]].model_validate(doc)
    wire = model.to_wire()
    assert wire["spec"] == doc["spec"], f"{where}: fields the API does not know, or wrong shapes"
    assert "status" not in doc, f"{where}: status is the controller's"


@pytest.mark.parametrize(("where", "doc"), ORDERS, ids=[i for i, _ in ORDERS])
def test_an_order_keeps_the_source_union(where: str, doc: dict[str, Any]) -> None:
    model = doc["spec"]["model"]
    if model["src"] == "HuggingFace":
        assert "kind" not in model["ref"], where
        owner, _, repo = model["ref"]["name"].partition("/")
        assert owner, f"{where}: `<owner>/<repo>`"
        assert repo, f"{where}: `<owner>/<repo>`"
    else:
        assert "revision" not in model["ref"], where
        assert "authSecretRef" not in model, where


@pytest.mark.parametrize(("where", "doc"), ORDERS, ids=[i for i, _ in ORDERS])
def test_an_order_names_a_class_that_is_shipped(where: str, doc: dict[str, Any]) -> None:
    shipped = {d["metadata"]["name"] for _, d in CLASSES}
    assert doc["spec"]["inferenceServiceClassName"] in shipped, where


def test_a_gated_order_names_the_secret_shipped_beside_it() -> None:
    docs = documents(EXAMPLES / "gated-model.yaml")
    secrets = {d["metadata"]["name"]: d for d in docs if d["kind"] == "Secret"}
    (order,) = [d for d in docs if d["kind"] == "InferenceService"]
    ref = order["spec"]["model"]["authSecretRef"]
    assert ref["key"] in secrets[ref["name"]]["stringData"]


@pytest.mark.parametrize(("where", "doc"), CLASSES, ids=[i for i, _ in CLASSES])
def test_a_class_names_only_recipes_that_are_shipped(where: str, doc: dict[str, Any]) -> None:
    shipped = {d["metadata"]["name"] for _, d in ALL_OBJECTS if d["kind"] == "InferenceRecipe"}
    assert set(doc["spec"].get("recipes") or []) <= shipped, where


def test_the_bundled_class_is_default_llm_and_its_priority_class_is_shipped() -> None:
    (cls,) = [d for _, d in CLASSES if d["metadata"]["name"] == "default-llm"]
    docs = documents(PLATFORM / "default-llm.yaml")
    priority_classes = {d["metadata"]["name"] for d in docs if d["kind"] == "PriorityClass"}
    assert cls["spec"]["scaling"]["priorityClassName"] in priority_classes


@pytest.mark.parametrize(
    "path",
    [PLATFORM / "settings.yaml", ROOT / "deploy" / "overlays" / "local" / "settings.yaml"],
    ids=["base", "local"],
)
def test_the_settings_configmap_has_only_keys_the_controller_reads(path: pathlib.Path) -> None:
    (cm,) = documents(path)
    data: dict[str, str] = cm["data"]
    assert set(data) <= set(SETTINGS_KEYS), f"unknown keys: {sorted(set(data) - set(SETTINGS_KEYS))}"
    settings = parse_settings(data, {})
    if "endpointIssuer" in data:
        assert settings.endpoint_issuer == data["endpointIssuer"]
