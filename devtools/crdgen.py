"""CustomResourceDefinitions generated from the pydantic models: one source of truth.

``crds()`` returns the CRD objects; ``hack/gen_crds.py`` writes them to ``deploy/crds/`` and a
test regenerates them and compares, so the schema and the models cannot drift apart.

The walk turns pydantic's JSON schema into a structural OpenAPI v3 schema: ``$ref``s inlined,
``X | None`` flattened to ``X``, ``int | str`` to ``x-kubernetes-int-or-string``, titles and
defaults dropped, every field's description kept (``kubectl explain`` shows them), and the
``CEL_RULES`` of a model attached as ``x-kubernetes-validations``.
"""

from __future__ import annotations

from typing import Any, cast

from pydantic import BaseModel

from shared.api.base import API_GROUP, API_VERSION
from shared.api.catalog import CatalogModel
from shared.api.inference_class import InferenceServiceClass
from shared.api.order import InferenceService
from shared.api.recipe import InferenceRecipe

JSON = dict[str, Any]

_KEEP = {
    "type",
    "description",
    "properties",
    "required",
    "items",
    "enum",
    "pattern",
    "minLength",
    "maxLength",
    "minimum",
    "maximum",
    "minItems",
    "maxItems",
    "additionalProperties",
    "format",
    "x-kubernetes-list-type",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-int-or-string",
    "x-kubernetes-validations",
    "x-kubernetes-preserve-unknown-fields",
}


def _rules_by_title(model: type[BaseModel], seen: dict[str, list[dict[str, str]]]) -> None:
    rules = getattr(model, "CEL_RULES", None)
    if rules:
        seen[model.__name__] = list(rules)
    for field in model.model_fields.values():
        for arg in _model_args(field.annotation):
            if arg.__name__ not in seen:
                _rules_by_title(arg, seen)


def _model_args(annotation: object) -> list[type[BaseModel]]:
    out: list[type[BaseModel]] = []
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    for arg in getattr(annotation, "__args__", ()) or ():
        out.extend(_model_args(arg))
    return out


def _convert(node: JSON, defs: JSON, rules: dict[str, list[dict[str, str]]]) -> JSON:
    if "$ref" in node:
        name = node["$ref"].split("/")[-1]
        target = dict(defs[name])
        for k in ("description",):
            if k in node:
                target[k] = node[k]
        inlined = _convert(target, defs, rules)
        if name in rules:
            inlined["x-kubernetes-validations"] = rules[name]
        return inlined
    if "anyOf" in node:
        options = [o for o in node["anyOf"] if o.get("type") != "null"]
        types = sorted(o.get("type", "") for o in options)
        if types == ["integer", "string"]:
            merged: JSON = {"x-kubernetes-int-or-string": True}
            for o in options:
                if o.get("type") == "string" and "pattern" in o:
                    merged["pattern"] = o["pattern"]
        elif len(options) == 1:
            merged = dict(options[0])
        else:
            raise ValueError(f"cannot express union {node['anyOf']} structurally")
        for k, v in node.items():
            if k != "anyOf":
                merged[k] = v
        return _convert(merged, defs, rules)
    if "const" in node:
        node = {**node, "enum": [node["const"]], "type": "string"}
    out: JSON = {}
    for key, value in node.items():
        if key not in _KEEP:
            continue
        if key == "properties":
            out[key] = {k: _convert(v, defs, rules) for k, v in value.items()}
        elif key == "items" or (key == "additionalProperties" and isinstance(value, dict)):
            out[key] = _convert(value, defs, rules)
        else:
            out[key] = value
    if out.get("x-kubernetes-int-or-string"):
        out.pop("type", None)
    if out.get("type") == "integer" and "format" not in out:
        out["format"] = "int64"
    return out


def schema_of(model: type[BaseModel]) -> JSON:
    """The structural OpenAPI v3 schema of a model, with descriptions and CEL rules."""
    raw = model.model_json_schema(by_alias=True, mode="validation")
    defs = cast(JSON, raw.pop("$defs", {}))
    rules: dict[str, list[dict[str, str]]] = {}
    _rules_by_title(model, rules)
    return _convert(raw, defs, rules)


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
