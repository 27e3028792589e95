"""The contract an object must keep, read from the CRDs and the documents, not from the webhook. Pure.

Two sources, and nothing of ``webhook/`` or ``shared.api``:

- **the CRD schemas** in ``deploy/crds`` (what ``kubectl apply`` and the API server enforce): types,
  required fields, enums, patterns, lengths, bounds, list sets and map keys, no field outside the
  schema (api.md: an unknown block is pruned, so none may be stored), and the
  ``x-kubernetes-validations`` rules, evaluated with celpy;
- **the refusals the documents promise** beyond the schema, each named with its source in
  ``RULES`` below (spec api.md, docs/admin-guide.md, and the Kubernetes and Hugging Face rules
  they lean on).

``refusals(kind, obj)`` lists why the contract refuses ``obj``; empty when it accepts it.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import celpy
import yaml
from celpy.adapter import json_to_cel

Obj = Mapping[str, Any]
CRDS = Path(__file__).resolve().parents[2] / "deploy" / "crds"
FILES = {
    "InferenceService": "inferenceservices.yaml",
    "InferenceServiceClass": "inferenceserviceclasses.yaml",
    "InferenceRecipe": "inferencerecipes.yaml",
}
TYPES: dict[str, Callable[[Any], bool]] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
}


@functools.cache
def schema_of(kind: str) -> dict[str, Any]:
    crd = yaml.safe_load((CRDS / FILES[kind]).read_text())
    (version,) = [v for v in crd["spec"]["versions"] if v.get("storage")]
    return dict(version["schema"]["openAPIV3Schema"])


def schema_problems(schema: Mapping[str, Any], value: Any, path: str) -> list[str]:
    """What the structural schema (and its CEL rules) says about ``value``."""
    if value is None:
        return [] if schema.get("nullable") else [f"{path}: must not be null"]
    if schema.get("x-kubernetes-int-or-string"):
        if not (TYPES["integer"](value) or isinstance(value, str)):
            return [f"{path}: must be an integer or a string"]
    elif "type" in schema and not TYPES[schema["type"]](value):
        return [f"{path}: must be of type {schema['type']}"]
    out: list[str] = []
    if "enum" in schema and value not in schema["enum"]:
        out.append(f"{path}: must be one of {schema['enum']}")
    if isinstance(value, str):
        out += _string(schema, value, path)
    if TYPES["number"](value):
        if "minimum" in schema and value < schema["minimum"]:
            out.append(f"{path}: must be at least {schema['minimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            out.append(f"{path}: must be at most {schema['maximum']}")
    if isinstance(value, list):
        out += _array(schema, value, path)
    if isinstance(value, dict):
        out += _object(schema, value, path)
    for rule in schema.get("x-kubernetes-validations") or []:
        if not _holds(rule["rule"], value):
            out.append(f"{path}: {rule.get('message') or rule['rule']}")
    return out


def _string(schema: Mapping[str, Any], value: str, path: str) -> list[str]:
    out = []
    if len(value) < schema.get("minLength", 0):
        out.append(f"{path}: shorter than {schema['minLength']}")
    if "maxLength" in schema and len(value) > schema["maxLength"]:
        out.append(f"{path}: longer than {schema['maxLength']}")
    if "pattern" in schema and not re.search(schema["pattern"], value):
        out.append(f"{path}: must match {schema['pattern']}")
    return out


def _array(schema: Mapping[str, Any], value: list[Any], path: str) -> list[str]:
    out = []
    if len(value) < schema.get("minItems", 0):
        out.append(f"{path}: fewer than {schema['minItems']} items")
    if "maxItems" in schema and len(value) > schema["maxItems"]:
        out.append(f"{path}: more than {schema['maxItems']} items")
    if schema.get("x-kubernetes-list-type") == "set" and len({repr(v) for v in value}) < len(value):
        out.append(f"{path}: a set must not repeat an item")
    keys = schema.get("x-kubernetes-list-map-keys")
    if schema.get("x-kubernetes-list-type") == "map" and keys:
        seen = [tuple(repr(v.get(k)) for k in keys) for v in value if isinstance(v, dict)]
        if len(set(seen)) < len(seen):
            out.append(f"{path}: a map list must not repeat its keys {keys}")
    for i, item in enumerate(value):
        out += schema_problems(schema.get("items") or {}, item, f"{path}[{i}]")
    return out


def _object(schema: Mapping[str, Any], value: dict[str, Any], path: str) -> list[str]:
    props = schema.get("properties") or {}
    # the API server prunes a null of a field that is not nullable before it validates
    value = {k: v for k, v in value.items() if v is not None or (props.get(k) or {}).get("nullable")}
    out = [f"{path}.{k}: required" for k in schema.get("required") or [] if k not in value]
    extra = schema.get("additionalProperties")
    for key, item in value.items():
        if key in props:
            out += schema_problems(props[key], item, f"{path}.{key}")
        elif isinstance(extra, dict):
            out += schema_problems(extra, item, f"{path}.{key}")
        elif props and not schema.get("x-kubernetes-preserve-unknown-fields") and path != "":
            out.append(f"{path}.{key}: not in the schema (pruned, so never stored)")
    return out


@functools.cache
def _program(rule: str) -> Any:
    env = celpy.Environment()
    return env.program(env.compile(rule))


def _holds(rule: str, value: Any) -> bool:
    """A CRD rule on ``self``; a rule that cannot be evaluated counts as broken (the API server refuses)."""
    try:
        return bool(_program(rule).evaluate({"self": json_to_cel(value)}))
    except Exception:
        return False


# --- what the documents promise beyond the schema ---------------------------------------------------

DNS_1035 = re.compile(r"^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$")  # Kubernetes: a Service name
DNS_1123 = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
LABEL_NAME = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)$")
COUNT = re.compile(r"^[0-9]+(\.[0-9]+)?[KMBT]?$")  # the CRD's pattern; api.md: 500M, 7B, 1.5T
UNITS = {"": 1, "K": 10**3, "M": 10**6, "B": 10**9, "T": 10**12}
# distribution/reference: [registry[:port]/]path[:tag][@digest], the name at most 255 characters
IMAGE = re.compile(
    r"^(?:[a-zA-Z0-9.-]+(?::[0-9]+)?/)?[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*"
    r"(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(?:@sha256:[a-f0-9]{64})?$"
)
IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")  # a transformers architecture is a Python class


def _get(obj: Any, *path: str) -> Any:
    for key in path:
        obj = obj.get(key) if isinstance(obj, Mapping) else None
    return obj


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _count(value: Any) -> int | None:
    """api.md: a parameter count is an integer or a string such as 500M, 7B or 1.5T."""
    if TYPES["integer"](value):
        return int(value)
    if isinstance(value, str) and COUNT.match(value):
        unit = value[-1] if value[-1] in UNITS else ""
        return int(float(value[: len(value) - len(unit)]) * UNITS[unit])
    return None


def names(obj: Obj, what: str, *path: str | int) -> list[str]:
    """A Kubernetes object is named by a DNS-1123 subdomain (at most 253 characters)."""
    value: Any = obj
    for key in path:
        if isinstance(value, list) and isinstance(key, int) and key < len(value):
            value = value[key]
        else:
            value = value.get(key) if isinstance(value, Mapping) else None
    ok = value is None or (isinstance(value, str) and len(value) <= 253 and DNS_1123.match(value))
    return [] if ok else [f"{'.'.join(map(str, path))}: not the name of a {what}"]


def order_rules(obj: Obj) -> list[str]:
    out = names(obj, "Secret", "spec", "model", "authSecretRef", "name")
    name = _get(obj, "metadata", "name")
    if isinstance(name, str) and not DNS_1035.match(name):
        out.append("metadata.name: the order's Service takes its name, so it must be a DNS-1035 label")
    ref = _map(_get(obj, "spec", "model", "ref"))
    repo = ref.get("name")
    if _get(obj, "spec", "model", "src") == "HuggingFace" and isinstance(repo, str):
        # huggingface_hub's validate_repo_id: no `--` or `..`, no part ending in `-` or `.`, no `.git`.
        parts = repo.split("/")
        if "--" in repo or ".." in repo or repo.endswith(".git") or any(p[-1:] in ("-", ".") for p in parts):
            out.append(f"spec.model.ref.name: the Hub refuses the repository id {repo!r}")
        revision = ref.get("revision")
        # git check-ref-format (api.md: a branch, tag or commit)
        if isinstance(revision, str) and (
            ".." in revision
            or "//" in revision
            or revision.endswith(("/", ".", ".lock"))
            or any(p.startswith(".") for p in revision.split("/"))
        ):
            out.append(f"spec.model.ref.revision: git refuses the ref {revision!r}")
    return out


def class_rules(obj: Obj) -> list[str]:
    out = names(obj, "PriorityClass", "spec", "scaling", "priorityClassName")
    for i in range(len(_list(_get(obj, "spec", "recipes")))):
        out += names(obj, "InferenceRecipe", "spec", "recipes", i)
    for i in range(len(_list(_get(obj, "spec", "placement", "deviceClassNames")))):
        out += names(obj, "DeviceClass", "spec", "placement", "deviceClassNames", i)
    placement = _map(_get(obj, "spec", "placement"))
    selector = placement.get("selector")
    if isinstance(selector, str):  # admin-guide: the webhook refuses a selector that does not compile
        try:
            celpy.Environment().compile(selector)
        except Exception:
            out.append("spec.placement.selector: does not compile")
    modes = _list(placement.get("sharingModes")) or ["Exclusive"]
    nodes = placement.get("maxNodesPerReplica")
    if isinstance(nodes, int) and nodes > 1 and "Exclusive" not in modes:  # admin-guide, multi-node
        out.append("spec.placement.maxNodesPerReplica: above 1 needs Exclusive in sharingModes")
    for key, value in _map(placement.get("nodeSelector")).items():  # core/v1 label rules
        prefix, _, label = str(key).rpartition("/")
        if not LABEL_NAME.match(label) or (prefix and (len(prefix) > 253 or not DNS_1123.match(prefix))):
            out.append(f"spec.placement.nodeSelector: {key!r} is not a label key")
        if not isinstance(value, str) or (value and not LABEL_NAME.match(value)):
            out.append(f"spec.placement.nodeSelector.{key}: not a label value")
    for i, t in enumerate(_list(placement.get("tolerations"))):  # core/v1 Toleration
        if not isinstance(t, Mapping):
            continue
        if t.get("operator") == "Exists" and t.get("value"):
            out.append(f"spec.placement.tolerations[{i}]: a value only with operator Equal")
        if t.get("tolerationSeconds") is not None and t.get("effect") != "NoExecute":
            out.append(f"spec.placement.tolerations[{i}]: tolerationSeconds only with NoExecute")
        if not t.get("key") and t.get("operator", "Equal") != "Exists":
            out.append(f"spec.placement.tolerations[{i}]: an empty key only with operator Exists")
    low, high = _get(obj, "spec", "scaling", "minReplicas"), _get(obj, "spec", "scaling", "maxReplicas")
    if TYPES["integer"](low) and TYPES["integer"](high) and low > high:  # an HPA's own rule
        out.append("spec.scaling: minReplicas above maxReplicas")
    bounds = _map(_get(obj, "spec", "modelPolicy", "parameterCount"))
    counts = {k: _count(v) for k, v in bounds.items() if k in ("min", "max")}
    out += [f"spec.modelPolicy.parameterCount.{k}: not a count" for k, v in counts.items() if v is None]
    if counts.get("min") is not None and counts.get("max") is not None and counts["min"] > counts["max"]:  # type: ignore[operator]
        out.append("spec.modelPolicy.parameterCount: min above max")
    return out


def recipe_rules(obj: Obj) -> list[str]:
    out = []
    image = _get(obj, "spec", "image")
    if isinstance(image, str) and (not IMAGE.match(image) or len(image.split("@")[0].split(":")[0]) > 255):
        out.append(f"spec.image: {image!r} is not a container image reference")
    for a in _list(_get(obj, "spec", "architectures")):  # admin-guide: "*" or architecture names
        if a != "*" and not (isinstance(a, str) and IDENTIFIER.match(a)):
            out.append(f"spec.architectures: {a!r} is not an architecture name")
    return out


RULES: dict[str, Callable[[Obj], list[str]]] = {
    "InferenceService": order_rules,
    "InferenceServiceClass": class_rules,
    "InferenceRecipe": recipe_rules,
}


def refusals(kind: str, obj: Obj) -> list[str]:
    """Why the contract refuses ``obj`` of ``kind``; empty when it accepts it."""
    return schema_problems(schema_of(kind), obj, "") + RULES[kind](obj)
