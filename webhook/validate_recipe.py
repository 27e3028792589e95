"""Validating an InferenceRecipe: a launch description the planner can compile.

Checks the runtime adapter, the image reference, the endpoint types and formats, the architecture
names, the quantization methods with their least compute capability, the memory share and the extra
arguments. Every problem is reported at once.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from shared import runtime_images
from shared.api.enums import ENDPOINT_TYPES, MODEL_FORMATS, RUNTIMES
from shared.api.recipe import COMPUTE_CAPABILITY_PATTERN
from webhook.problems import Problems, shown

COMPUTE_CAPABILITY = re.compile(COMPUTE_CAPABILITY_PATTERN)
# An image reference: [registry[:port]/]path[:tag][@digest], without spaces or upper-case repository names.
# A path component is the distribution grammar's: alphanumerics joined by one `.` or `_`, by `__`, or by
# dashes (so `a..b` and `a._b` are refused, as a registry would).
IMAGE = re.compile(
    r"^(?:[A-Za-z0-9.-]+(?::[0-9]+)?/)?[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*"
    r"(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(?:@[a-z0-9]+:[a-f0-9]{32,})?$"
)
# A quantization method name as the planner compares it: lower case, as in a model's quantization_config.
METHOD = re.compile(r"^[a-z0-9][a-z0-9_-]{0,62}$")
ARCHITECTURE = re.compile(r"^(\*|[A-Za-z_][A-Za-z0-9_]{0,127})$")


def recipe_problems(obj: Mapping[str, Any]) -> list[str]:
    """Every problem of the recipe ``obj`` (the raw object of the request), in field order."""
    problems = Problems()
    spec = problems.obj(obj, ("spec",), required=True)
    if spec is None:
        return problems.items
    problems.one_of(spec, ("spec", "runtime"), RUNTIMES, required=True)
    problems.string(
        spec,
        ("spec", "image"),
        required=True,
        pattern=IMAGE,
        expected=f"a container image reference such as `{runtime_images.pinned().image}`",
        max_length=1024,
    )
    problems.enum_list(spec, ("spec", "endpointTypes"), ENDPOINT_TYPES, required=True, non_empty=True)
    problems.enum_list(spec, ("spec", "formats"), MODEL_FORMATS, required=True, non_empty=True)
    architectures = problems.items_of(spec, ("spec", "architectures"), required=False, non_empty=True)
    if architectures is not None:
        for i, name in enumerate(architectures):
            problems.string_value(
                name,
                ("spec", "architectures", i),
                required=True,
                pattern=ARCHITECTURE,
                expected='a Hugging Face architecture name such as `Qwen2ForCausalLM`, or "*" for all',
            )
        problems.unique(architectures, ("spec", "architectures"))
    _quantizations(problems, spec)
    _memory_share(problems, spec)
    extra = problems.items_of(spec, ("spec", "extraArgs"), required=False)
    if extra is not None:
        for i, arg in enumerate(extra):
            if not isinstance(arg, str):
                problems.add(("spec", "extraArgs", i), f"must be a string, not {shown(arg)}")
    return problems.items


def _quantizations(problems: Problems, spec: Mapping[str, Any]) -> None:
    items = problems.items_of(spec, ("spec", "quantizations"), required=False)
    if items is None:
        return
    methods: list[str] = []
    for i, item in enumerate(items):
        path = ("spec", "quantizations", i)
        if not isinstance(item, Mapping):
            problems.add(
                path, f"must be an object with `method` and `minComputeCapability`, not {shown(item)}"
            )
            continue
        method = problems.string(
            item,
            (*path, "method"),
            required=True,
            pattern=METHOD,
            expected="a quantization method in lower case, such as `none`, `awq`, `gptq`, `fp8` or `gguf`",
        )
        if method is not None and method in methods:
            problems.add((*path, "method"), f'must not repeat "{method}"')
        elif method is not None:
            methods.append(method)
        problems.string(
            item,
            (*path, "minComputeCapability"),
            required=True,
            pattern=COMPUTE_CAPABILITY,
            expected='a CUDA compute capability `<major>.<minor>` such as "8.9"',
        )


def _memory_share(problems: Problems, spec: Mapping[str, Any]) -> None:
    value = spec.get("gpuMemoryUtilization")
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0.5 <= value <= 0.98:
        problems.add(
            ("spec", "gpuMemoryUtilization"), f"must be a number from 0.5 to 0.98, not {shown(value)}"
        )
