"""CustomResourceDefinitions generated from the pydantic models: one source of truth.

``crds()`` returns the CRD objects; ``hack/gen_crds.py`` writes them to ``deploy/crds/`` and a
test regenerates them and compares, so the schema and the models cannot drift apart. The schemas
come from ``devtools.crdschema``.
"""

from __future__ import annotations

from pydantic import BaseModel

from devtools.crdschema import JSON, schema_of
from shared.api.base import API_GROUP, API_VERSION
from shared.api.catalog import CatalogModel
from shared.api.inference_class import InferenceServiceClass
from shared.api.order import InferenceService
from shared.api.recipe import InferenceRecipe


def _top(model: type[BaseModel], description: str, *, with_status: bool = True) -> JSON:
    body = schema_of(model)
    props = body["properties"]
    props["apiVersion"] = {
        "type": "string",
        "description": "APIVersion of this object: ai.deckhouse.io/v1alpha1.",
    }
    props["kind"] = {"type": "string", "description": "Kind of this object."}
    props["metadata"] = {"type": "object"}  # the API server allows nothing else here
    if not with_status:
        props.pop("status", None)
    return {
        "type": "object",
        "description": description,
        "properties": props,
        "required": [k for k in body.get("required", []) if k in props and k not in ("metadata",)],
    }


def _crd(
    *,
    kind: str,
    plural: str,
    singular: str,
    scope: str,
    short_names: list[str],
    schema: JSON,
    columns: list[JSON],
    categories: list[str],
) -> JSON:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{API_GROUP}", "labels": {"app.kubernetes.io/part-of": "inference"}},
        "spec": {
            "group": API_GROUP,
            "scope": scope,
            "names": {
                "kind": kind,
                "listKind": f"{kind}List",
                "plural": plural,
                "singular": singular,
                "shortNames": short_names,
                "categories": categories,
            },
            "versions": [
                {
                    "name": API_VERSION,
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "additionalPrinterColumns": columns,
                    "schema": {"openAPIV3Schema": schema},
                }
            ],
        },
    }


def _col(name: str, path: str, *, type_: str = "string", priority: int = 0, description: str = "") -> JSON:
    out: JSON = {"name": name, "type": type_, "jsonPath": path}
    if priority:
        out["priority"] = priority
    if description:
        out["description"] = description
    return out


AGE = _col("Age", ".metadata.creationTimestamp", type_="date")


def order_crd() -> JSON:
    return _crd(
        kind="InferenceService",
        plural="inferenceservices",
        singular="inferenceservice",
        scope="Namespaced",
        short_names=["aisvc"],
        categories=["ai"],
        schema=_top(
            InferenceService,
            "InferenceService is an order for LLM inference: name a class and a model, and the platform "
            "decides the accelerator, the runtime and every launch parameter.",
        ),
        columns=[
            _col("Class", ".spec.inferenceServiceClassName"),
            _col("Model", ".spec.model.ref.name"),
            _col("Type", ".status.model.endpointType", description="The API contract the platform picked."),
            _col("Phase", ".status.phase"),
            _col("Reason", '.status.conditions[?(@.type=="Ready")].reason', description="Reason of Ready."),
            _col("URL", ".status.endpoint.url"),
            _col("Accelerator", ".status.resolved.acceleratorProductName", priority=1),
            AGE,
        ],
    )


def class_crd() -> JSON:
    return _crd(
        kind="InferenceServiceClass",
        plural="inferenceserviceclasses",
        singular="inferenceserviceclass",
        scope="Cluster",
        short_names=["aiclass"],
        categories=["ai-admin"],
        schema=_top(
            InferenceServiceClass,
            "InferenceServiceClass is the administrator's policy for orders: which models and API contracts "
            "are allowed, which devices may be used, how many replicas, and how the endpoint is exposed.",
        ),
        columns=[
            _col("Exposure", ".spec.exposure.type"),
            _col("Auth", ".spec.exposure.authentication"),
            _col("Ready", '.status.conditions[?(@.type=="Ready")].status'),
            _col("Reason", '.status.conditions[?(@.type=="Ready")].reason', priority=1),
            AGE,
        ],
    )


def recipe_crd() -> JSON:
    return _crd(
        kind="InferenceRecipe",
        plural="inferencerecipes",
        singular="inferencerecipe",
        scope="Cluster",
        short_names=["airecipe"],
        categories=["ai-admin"],
        schema=_top(
            InferenceRecipe,
            "InferenceRecipe describes how one runtime launches a model; the planner compiles it against the "
            "chosen hardware into a launch plan.",
        ),
        columns=[_col("Runtime", ".spec.runtime"), _col("Image", ".spec.image"), AGE],
    )


def catalog_crds() -> list[JSON]:
    """Small stand-ins for the sibling catalog module's CRDs, installed by tests only."""
    status = schema_of(CatalogModel)["properties"]["status"]
    status["x-kubernetes-preserve-unknown-fields"] = True
    schema: JSON = {
        "type": "object",
        "description": "A model of the catalog (test stand-in for the sibling module's CRD).",
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            "status": status,
        },
    }
    cols = [_col("Phase", ".status.phase"), AGE]
    return [
        _crd(
            kind="Model",
            plural="models",
            singular="model",
            scope="Namespaced",
            short_names=[],
            schema=schema,
            columns=cols,
            categories=["ai"],
        ),
        _crd(
            kind="ClusterModel",
            plural="clustermodels",
            singular="clustermodel",
            scope="Cluster",
            short_names=[],
            schema=schema,
            columns=cols,
            categories=["ai"],
        ),
    ]


def crds() -> dict[str, JSON]:
    """File name -> CRD, for deploy/crds."""
    return {
        "inferenceservices.yaml": order_crd(),
        "inferenceserviceclasses.yaml": class_crd(),
        "inferencerecipes.yaml": recipe_crd(),
    }
