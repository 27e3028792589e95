"""A seeded generator of orders, classes and recipes, valid and broken. Pure.

Valid objects are drawn field by field from the pydantic models of ``shared.api`` (their field
names, enums, patterns and bounds, and the CEL union rules of the CRDs); broken ones are valid ones
with one to three mutations: a field removed, a value of the wrong type, a near miss of a pattern
or a bound, a union rule broken, an unknown field added. ``Case.valid`` says which the generator
meant; the verdict does not trust it (the contract is judged on what was stored).
"""

from __future__ import annotations

import copy
import random
import string
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from shared import runtime_images
from shared.api.base import API_GROUP, API_VERSION
from shared.api.enums import ENDPOINT_TYPES, MODEL_FORMATS, SHARING_MODES

Obj = dict[str, Any]
KINDS = ("InferenceService", "InferenceServiceClass", "InferenceRecipe")
PLURALS = {
    "InferenceService": "inferenceservices",
    "InferenceServiceClass": "inferenceserviceclasses",
    "InferenceRecipe": "inferencerecipes",
}
# A few repositories the mirror serves (so some orders get planned), the rest invented.
MIRROR_REPOS = (
    "Qwen/Qwen2.5-0.5B-Instruct",
    "sentence-transformers/all-MiniLM-L6-v2",
    "BAAI/bge-reranker-v2-m3",
)
SELECTORS = (
    'device.attributes["gpu.nvidia.com"].productName.matches("H100|A100")',
    'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) >= 0',
    'device.attributes["gpu.nvidia.com"].architecture == "Hopper"',
    'device.attributes["gpu.nvidia.com"].cudaComputeCapability.isGreaterThan(semver("8.0.0"))',
    "true",
)
BAD_SELECTORS = ("device.", "1 +", 'device.attributes["x"].', "((", "device.capacity > 3", "x" * 10241)
IMAGES = (runtime_images.pinned().image, "registry.local:5000/vllm/vllm-openai:v0.9.2", "vllm/vllm-openai")
TRICKY = (
    "", " ", "a", "A", "-a", "a-", "a.", ".a", "a..b", "a--b", "a//b", "a/b/c", "/a", "a/", "a.git",
    "a.lock", "ä/b", "a b", "a\tb", "a\nb", "UPPER/Case", "x" * 96 + "/y", "x/" + "y" * 96, "x" * 254,
    "x" * 256, "0/0", "a/b\x00", "${jndi}", "../etc", "main", "a" * 63, "a" * 64, "null", "true", "7B",
    "1.5T", "500M", "7X", "-7B", "0", "8.0", "8", "v1", "@sha256:" + "a" * 64,
)  # fmt: skip
JUNK: tuple[Any, ...] = (
    None,
    True,
    False,
    0,
    -1,
    1,
    65,
    2**31,
    2**63,
    1.5,
    0.49,
    0.99,
    "1",
    [],
    {},
    [1],
    {"a": 1},
)


@dataclass(frozen=True)
class Case:
    kind: str
    obj: Obj
    valid: bool  # what the generator meant
    mutations: tuple[str, ...] = ()

    @property
    def plural(self) -> str:
        return PLURALS[self.kind]


def dns(rng: random.Random, n: int = 8) -> str:
    body = "".join(rng.choice(string.ascii_lowercase + string.digits + "-") for _ in range(n))
    return "x" + body.strip("-") + "z"


def _subset(rng: random.Random, items: tuple[str, ...]) -> list[str]:
    out = [x for x in items if rng.random() < 0.5]
    return out or [rng.choice(items)]


def _repo(rng: random.Random) -> str:
    if rng.random() < 0.05:
        return rng.choice(MIRROR_REPOS)
    part = "".join(
        rng.choice(string.ascii_letters + string.digits + "._-") for _ in range(rng.randint(1, 12))
    )
    owner = rng.choice(string.ascii_letters) + "".join(rng.choice(string.ascii_lowercase) for _ in range(4))
    tail = rng.choice(string.ascii_letters + string.digits) + part.replace("--", "-").replace("..", ".")
    return f"{owner}/{tail.rstrip('.-') or 'm'}"


def order_spec(rng: random.Random, classes: list[str]) -> Obj:
    klass = rng.choice(["default-llm", "default-llm", dns(rng), *classes[-3:]])
    model: Obj
    if rng.random() < 0.7:
        ref: Obj = {"name": _repo(rng)}
        if rng.random() < 0.4:
            ref["revision"] = rng.choice(["main", "v1.0", "refs/pr/1", "a" * 40, "release/2024-01"])
        model = {"src": "HuggingFace", "ref": ref}
        if rng.random() < 0.3:
            model["authSecretRef"] = {"name": dns(rng)} | ({"key": "token"} if rng.random() < 0.5 else {})
    else:
        ref = {"name": dns(rng)}
        if rng.random() < 0.5:
            ref["kind"] = rng.choice(["ClusterModel", "Model"])
        model = {"src": "Catalog", "ref": ref}
    return {"inferenceServiceClassName": klass, "model": model}


def class_spec(rng: random.Random, recipes: list[str]) -> Obj:
    policy: Obj = {"allowedEndpointTypes": _subset(rng, ENDPOINT_TYPES)}
    if rng.random() < 0.5:
        policy["allowedSources"] = _subset(rng, ("HuggingFace", "Catalog"))
    if rng.random() < 0.5:
        policy["allowedFormats"] = _subset(rng, MODEL_FORMATS)
    if rng.random() < 0.5:
        low, high = sorted(rng.sample([100_000_000, 500_000_000, 7_000_000_000, 80_000_000_000], 2))
        counts = {100_000_000: "100M", 500_000_000: "500M", 7_000_000_000: "7B", 80_000_000_000: "80B"}
        policy["parameterCount"] = {
            k: (v if rng.random() < 0.5 else counts[v])
            for k, v in (("min", low), ("max", high))
            if rng.random() < 0.8
        }
    placement: Obj = {
        "deviceClassNames": rng.sample(["gpu.nvidia.com", "mig.nvidia.com", dns(rng)], rng.randint(1, 3))
    }
    if rng.random() < 0.4:
        placement["selector"] = rng.choice(SELECTORS)
    if rng.random() < 0.5:
        placement["sharingModes"] = rng.sample(SHARING_MODES, rng.randint(1, len(SHARING_MODES)))
    if rng.random() < 0.4:
        placement["maxAcceleratorsPerReplica"] = rng.randint(1, 64)
    spec: Obj = {"modelPolicy": policy, "placement": placement}
    if rng.random() < 0.6:
        low = rng.randint(1, 3)
        spec["scaling"] = {"minReplicas": low, "maxReplicas": low + rng.randint(0, 3)}
        if rng.random() < 0.3:
            spec["scaling"]["priorityClassName"] = "inference-default"
    if rng.random() < 0.6:
        spec["exposure"] = {
            "type": rng.choice(["ClusterLocal", "External"]),
            "authentication": rng.choice(["Token", "None"]),
        }
    if rng.random() < 0.7:
        spec["recipes"] = list(
            dict.fromkeys(rng.choice(["vllm", *recipes[-3:]]) for _ in range(rng.randint(0, 3)))
        )
    return spec


def recipe_spec(rng: random.Random) -> Obj:
    spec: Obj = {
        "runtime": "vLLM",
        "image": rng.choice(IMAGES),
        "endpointTypes": _subset(rng, ENDPOINT_TYPES),
        "formats": _subset(rng, MODEL_FORMATS),
    }
    if rng.random() < 0.5:
        spec["architectures"] = rng.sample(
            ["*", "Qwen2ForCausalLM", "LlamaForCausalLM", "BertModel"], rng.randint(1, 3)
        )
    if rng.random() < 0.5:
        methods = rng.sample(["none", "awq", "gptq", "fp8", "gguf", "bitsandbytes"], rng.randint(1, 3))
        spec["quantizations"] = [
            {"method": m, "minComputeCapability": rng.choice(["7.0", "8.0", "8.9", "9.0"])} for m in methods
        ]
    if rng.random() < 0.5:
        spec["gpuMemoryUtilization"] = round(rng.uniform(0.5, 0.98), 2)
    if rng.random() < 0.3:
        spec["extraArgs"] = rng.sample(
            ["--enforce-eager", "--max-num-seqs=8", "--disable-log-requests"], rng.randint(0, 2)
        )
    return spec


# -- mutations --------------------------------------------------------------------------------


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix] if prefix else []
    if isinstance(node, dict):
        for k, v in node.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += _paths(v, (*prefix, i))
    return out


def _parent(root: Any, path: tuple[Any, ...]) -> Any:
    for part in path[:-1]:
        root = root[part]
    return root


def _drop(rng: random.Random, spec: Obj) -> str:
    path = rng.choice(_paths(spec))
    parent = _parent(spec, path)
    if isinstance(parent, list):
        parent.pop(path[-1])
    else:
        del parent[path[-1]]
    return f"drop {path}"


def _junk(rng: random.Random, spec: Obj) -> str:
    path = rng.choice(_paths(spec))
    _parent(spec, path)[path[-1]] = copy.deepcopy(rng.choice(JUNK))
    return f"junk {path}"


def _tricky(rng: random.Random, spec: Obj) -> str:
    strings = [p for p in _paths(spec) if isinstance(_parent(spec, p)[p[-1]], str)]
    path = rng.choice(strings or _paths(spec))
    _parent(spec, path)[path[-1]] = rng.choice(TRICKY)
    return f"tricky {path}"


def _unknown(rng: random.Random, spec: Obj) -> str:
    objects = [()] + [p for p in _paths(spec) if isinstance(_parent(spec, p)[p[-1]], dict)]
    path = rng.choice(objects)
    target = spec if not path else _parent(spec, path)[path[-1]]
    key = rng.choice(["runtime", "replicas", "image", "extra", "Kind", "x-y", "gpu", "$ref"])
    target[key] = copy.deepcopy(rng.choice(JUNK[:9]))
    return f"unknown {(*path, key)}"


def _duplicate(rng: random.Random, spec: Obj) -> str:
    lists = [p for p in _paths(spec) if isinstance(_parent(spec, p)[p[-1]], list) and _parent(spec, p)[p[-1]]]
    if not lists:
        return _junk(rng, spec)
    path = rng.choice(lists)
    items = _parent(spec, path)[path[-1]]
    items.append(copy.deepcopy(items[0]))
    return f"duplicate {path}"


def _order_union(rng: random.Random, spec: Obj) -> str:
    model = _obj(spec, "model")
    ref = _obj(model, "ref")
    choice = rng.randrange(5)
    if choice == 0:
        model["src"], ref["kind"] = "HuggingFace", rng.choice(["Model", "ClusterModel"])
    elif choice == 1:
        model["src"], ref["revision"] = "Catalog", "main"
    elif choice == 2:
        model["src"], model["authSecretRef"] = "Catalog", {"name": "hf"}
    elif choice == 3:
        model["src"], ref["name"] = "Catalog", "Qwen/Qwen2.5-0.5B-Instruct"
    else:
        model["src"] = rng.choice(["huggingface", "Hub", "", "catalog"])
    return f"union {choice}"


def _obj(spec: Obj, key: str) -> Obj:
    """``spec[key]`` as an object, made one (an earlier mutation may have put junk there)."""
    if not isinstance(spec.get(key), dict):
        spec[key] = {}
    value: Obj = spec[key]
    return value


def _class_bounds(rng: random.Random, spec: Obj) -> str:
    choice = rng.randrange(5)
    if choice == 0:
        spec["scaling"] = {"minReplicas": 3, "maxReplicas": rng.choice([1, 2])}
    elif choice == 1:
        _obj(spec, "modelPolicy")["parameterCount"] = {
            "min": "7B",
            "max": rng.choice(["500M", 100, "1B"]),
        }
    elif choice == 2 and isinstance(spec.get("placement"), dict):
        spec["placement"]["selector"] = rng.choice(BAD_SELECTORS)
    elif choice == 3 and isinstance(spec.get("placement"), dict):
        spec["placement"]["maxAcceleratorsPerReplica"] = rng.choice([0, 65, -1])
    else:
        _obj(spec, "modelPolicy")["parameterCount"] = {"max": rng.choice(["7X", "1.5", "B", "", "1e9", "7b"])}
    return f"bounds {choice}"


def _recipe_bounds(rng: random.Random, spec: Obj) -> str:
    choice = rng.randrange(4)
    if choice == 0:
        spec["gpuMemoryUtilization"] = rng.choice([0.49, 0.99, 1, 0, "0.9"])
    elif choice == 1:
        spec["quantizations"] = [
            {
                "method": rng.choice(["AWQ", "", "a b", "awq"]),
                "minComputeCapability": rng.choice(["8", "8.0.0", "x", "8.0"]),
            }
        ]
    elif choice == 2:
        spec["image"] = rng.choice(["", "Vllm/VLLM", "vllm openai", "vllm/vllm-openai:", "a" * 1100])
    else:
        spec["architectures"] = rng.choice([[], ["1abc"], ["*", "*"], ["Qwen2 ForCausalLM"]])
    return f"bounds {choice}"


Mutation = Callable[[random.Random, Obj], str]
GENERIC: tuple[Mutation, ...] = (_drop, _junk, _tricky, _tricky, _unknown, _duplicate)
SPECIFIC: dict[str, Mutation] = {
    "InferenceService": _order_union,
    "InferenceServiceClass": _class_bounds,
    "InferenceRecipe": _recipe_bounds,
}


@dataclass
class Generator:
    """``case(i)`` is the i-th object of the run: its kind, name and namespace, valid or broken."""

    seed: int
    namespaces: list[str]
    label: str  # the label that lets the run's webhook registration admit it
    valid_share: float = 0.4

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)
        self.classes: list[str] = []
        self.recipes: list[str] = []

    def case(self, i: int) -> Case:
        rng = self.rng
        kind = rng.choices(KINDS, weights=(6, 2, 2))[0]
        name = f"fz-{i:05d}-{dns(rng, 4)}"
        if kind == "InferenceService":
            spec = order_spec(rng, self.classes)
        elif kind == "InferenceServiceClass":
            spec = class_spec(rng, self.recipes)
        else:
            spec = recipe_spec(rng)
        valid = rng.random() < self.valid_share
        mutations: list[str] = []
        if not valid:
            for _ in range(rng.choice((1, 1, 2, 3))):
                if not _paths(spec):
                    break
                mutate = SPECIFIC[kind] if rng.random() < 0.35 else rng.choice(GENERIC)
                mutations.append(mutate(rng, spec))
        metadata: Obj = {"name": name, "labels": {self.label: "true"}}
        if kind == "InferenceService":
            metadata["namespace"] = rng.choice(self.namespaces)
        elif valid:
            (self.classes if kind == "InferenceServiceClass" else self.recipes).append(name)
        obj = {"apiVersion": f"{API_GROUP}/{API_VERSION}", "kind": kind, "metadata": metadata, "spec": spec}
        if not valid and rng.random() < 0.05:
            del obj["spec"]
            mutations.append("no spec")
        return Case(kind, obj, valid, tuple(mutations))
