"""Pydantic models -> structural OpenAPI v3 schemas, the form a CRD's ``openAPIV3Schema`` takes.

The walk turns pydantic's JSON schema into a structural schema: ``$ref``s inlined, ``X | None``
flattened to ``X``, ``int | str`` to ``x-kubernetes-int-or-string``, titles and defaults dropped,
every field's description kept (``kubectl explain`` shows them), and the ``CEL_RULES`` of a model
attached as ``x-kubernetes-validations``.
"""

from __future__ import annotations

from typing import Any, cast

from pydantic import BaseModel

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
