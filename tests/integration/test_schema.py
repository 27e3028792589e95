"""The API server itself enforces the order's schema: no webhook is involved here.

- a union mismatch is refused at write time by the CRD's CEL rules, and nothing is stored;
- `kubectl apply --validate=strict` refuses an order carrying `spec.runtime`;
- a client without strict validation gets `spec.runtime` pruned: the stored order lacks it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

pytestmark = pytest.mark.cluster

Kubectl = Callable[..., Any]

ORDER = """apiVersion: ai.deckhouse.io/v1alpha1
kind: InferenceService
metadata:
  name: {name}
  namespace: {namespace}
spec:
  inferenceServiceClassName: default-llm
  model:
{model}
"""


def order_yaml(name: str, namespace: str, model: str) -> str:
    return ORDER.format(name=name, namespace=namespace, model=model)


@pytest.mark.parametrize(
    ("name", "model", "expected"),
    [
        (
            "hf-with-kind",
            "    src: HuggingFace\n    ref: {kind: ClusterModel, name: Qwen/Qwen2.5-7B-Instruct}",
            "`spec.model.ref.kind`: must not be set when `spec.model.src` is `HuggingFace`",
        ),
        (
            "catalog-with-revision",
            "    src: Catalog\n    ref: {name: qwen, revision: main}",
            "`spec.model.ref.revision`: must not be set when `spec.model.src` is `Catalog`",
        ),
        (
            "catalog-with-secret",
            "    src: Catalog\n    ref: {name: qwen}\n    authSecretRef: {name: hf-token}",
            "`spec.model.authSecretRef`: must not be set when `spec.model.src` is `Catalog`",
        ),
        (
            "hf-bad-repo-id",
            "    src: HuggingFace\n    ref: {name: not-a-repo-id}",
            "must be a Hugging Face repository id",
        ),
    ],
)
def test_the_api_server_refuses_a_union_mismatch_at_write_time(
    crds: None, kubectl: Kubectl, namespace: str, name: str, model: str, expected: str
) -> None:
    result = kubectl("apply", "-f", "-", input=order_yaml(name, namespace, model), check=False)
    assert result.returncode != 0
    assert expected in result.stderr
    got = kubectl("get", "inferenceservice", name, "-n", namespace, "--ignore-not-found", "-o", "name")
    assert got.stdout.strip() == "", "nothing may be stored"


def test_strict_field_validation_refuses_spec_runtime(crds: None, kubectl: Kubectl, namespace: str) -> None:
    body = order_yaml("strict", namespace, "    src: HuggingFace\n    ref: {name: Qwen/Qwen2.5-7B-Instruct}")
    body += "  runtime:\n    image: evil/vllm:latest\n"
    result = kubectl("apply", "--validate=strict", "-f", "-", input=body, check=False)
    assert result.returncode != 0
    assert 'unknown field "spec.runtime"' in result.stderr
    got = kubectl("get", "inferenceservice", "strict", "-n", namespace, "--ignore-not-found", "-o", "name")
    assert got.stdout.strip() == ""


def test_a_non_strict_client_gets_spec_runtime_pruned(crds: None, kubectl: Kubectl, namespace: str) -> None:
    body = order_yaml("lenient", namespace, "    src: HuggingFace\n    ref: {name: Qwen/Qwen2.5-7B-Instruct}")
    body += "  runtime:\n    image: evil/vllm:latest\n  resources:\n    gpu: 8\n"
    kubectl("apply", "--validate=false", "-f", "-", input=body)
    stored = json.loads(kubectl("get", "inferenceservice", "lenient", "-n", namespace, "-o", "json").stdout)
    assert sorted(stored["spec"]) == ["inferenceServiceClassName", "model"]
    assert stored["spec"]["model"]["ref"]["name"] == "Qwen/Qwen2.5-7B-Instruct"


def test_kubectl_explain_describes_the_model_reference(crds: None, kubectl: Kubectl) -> None:
    out = kubectl("explain", "inferenceservice.spec.model.ref").stdout
    assert "repository id" in out
    assert "revision" in out and "kind" in out


CLASS = """apiVersion: ai.deckhouse.io/v1alpha1
kind: InferenceServiceClass
metadata:
  name: {name}
spec:
  modelPolicy: {{allowedEndpointTypes: [Chat]}}
  placement: {{deviceClassNames: [gpu.nvidia.com], sharingModes: [Exclusive]}}
  scaling: {scaling}
  exposure: {exposure}
"""


@pytest.mark.parametrize(
    ("name", "scaling", "exposure", "expected"),
    [
        (
            "schema-idle-without-zero",
            "{minReplicas: 1, scaleToZeroAfterSeconds: 300}",
            "{authentication: Token}",
            "`spec.scaling.scaleToZeroAfterSeconds`: only a class with `spec.scaling.minReplicas: 0`",
        ),
        (
            "schema-zero-without-token",
            "{minReplicas: 0}",
            "{authentication: None}",
            "`spec.scaling.minReplicas`: 0 (scale to zero) needs `spec.exposure.authentication: Token`",
        ),
        (
            "schema-idle-too-short",
            "{minReplicas: 0, scaleToZeroAfterSeconds: 10}",
            "{authentication: Token}",
            "spec.scaling.scaleToZeroAfterSeconds",
        ),
    ],
)
def test_the_api_server_refuses_a_scale_to_zero_class_it_cannot_serve(
    crds: None, kubectl: Kubectl, name: str, scaling: str, exposure: str, expected: str
) -> None:
    text = CLASS.format(name=name, scaling=scaling, exposure=exposure)
    result = kubectl("apply", "-f", "-", input=text, check=False)
    assert result.returncode != 0
    assert expected in result.stderr
    got = kubectl("get", "inferenceserviceclass", name, "--ignore-not-found", "-o", "name")
    assert got.stdout.strip() == "", "nothing may be stored"


def test_the_api_server_stores_a_class_that_scales_to_zero(crds: None, kubectl: Kubectl) -> None:
    name = "schema-zero-ok"
    text = CLASS.format(
        name=name, scaling="{minReplicas: 0, scaleToZeroAfterSeconds: 30}", exposure="{authentication: Token}"
    )
    try:
        kubectl("apply", "-f", "-", input=text)
        stored = json.loads(kubectl("get", "inferenceserviceclass", name, "-o", "json").stdout)
        assert stored["spec"]["scaling"] == {"minReplicas": 0, "scaleToZeroAfterSeconds": 30}
    finally:
        kubectl("delete", "inferenceserviceclass", name, "--ignore-not-found")
