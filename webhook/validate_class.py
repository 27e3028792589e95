"""Validating an InferenceServiceClass: the policy must be coherent before any order is planned under it.

Checks what the CRD schema cannot: bounds in order (parameter count, replicas), the scaling target
within its metric's range (a KV cache percent at most 100), the placement
selector compiling as a DRA CEL expression (``shared.cel.selector_error``), names of referenced
objects, node selector and tolerations the pod would accept (``webhook.validate_scheduling``), the
namespace selector's syntax (``shared.label_selector``), and no value listed twice. Every problem is reported at once.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from shared import label_selector
from shared.api.enums import (
    AUTHENTICATIONS,
    ENDPOINT_TYPES,
    EXPOSURE_TYPES,
    MODEL_FORMATS,
    MODEL_SOURCES,
    SCALING_METRICS,
    SHARING_MODES,
)
from shared.api.inference_class import (
    MAX_PERCENT_TARGET,
    MAX_SCALE_DOWN_STABILIZATION_SECONDS,
    MAX_SCALE_TO_ZERO_AFTER_SECONDS,
    MIN_SCALE_TO_ZERO_AFTER_SECONDS,
)
from shared.cel import selector_error
from shared.quantity import QuantityError, parse_parameter_count
from webhook.problems import Problems, shown
from webhook.validate_scheduling import scheduling_problems

MAX_SELECTOR_LENGTH = 10240


def class_problems(obj: Mapping[str, Any]) -> list[str]:
    """Every problem of the class ``obj`` (the raw object of the request), in field order."""
    problems = Problems()
    spec = problems.obj(obj, ("spec",), required=True)
    if spec is None:
        return problems.items
    policy = problems.obj(spec, ("spec", "modelPolicy"), required=True)
    if policy is not None:
        _model_policy(problems, policy)
    placement = problems.obj(spec, ("spec", "placement"), required=True)
    if placement is not None:
        _placement(problems, placement)
    scaling = problems.obj(spec, ("spec", "scaling"), required=False)
    low = _scaling(problems, scaling) if scaling is not None else None
    exposure = problems.obj(spec, ("spec", "exposure"), required=False)
    authentication = None
    if exposure is not None:
        problems.one_of(exposure, ("spec", "exposure", "type"), EXPOSURE_TYPES, required=False)
        authentication = problems.one_of(
            exposure, ("spec", "exposure", "authentication"), AUTHENTICATIONS, required=False
        )
    if low == 0 and authentication == "None":
        # the activator wakes an order at zero only for a request with its token
        problems.add(
            ("spec", "scaling", "minReplicas"),
            "0 (scale to zero) needs `spec.exposure.authentication: Token`: only a request with the "
            "order's token wakes it, and without a token any caller could make the order take a GPU",
        )
    recipes = problems.items_of(spec, ("spec", "recipes"), required=False)
    if recipes is not None:
        for i, name in enumerate(recipes):
            problems.dns_name_value(
                name, ("spec", "recipes", i), required=True, what="the name of an InferenceRecipe"
            )
        problems.unique(recipes, ("spec", "recipes"))
    namespaces = spec.get("namespaceSelector")
    if namespaces is not None:
        for path, message in label_selector.problems(namespaces):
            problems.add(("spec", "namespaceSelector", *path), message)
    return problems.items


def _model_policy(problems: Problems, policy: Mapping[str, Any]) -> None:
    base = ("spec", "modelPolicy")
    problems.enum_list(policy, (*base, "allowedEndpointTypes"), ENDPOINT_TYPES, required=True, non_empty=True)
    problems.enum_list(policy, (*base, "allowedSources"), MODEL_SOURCES, required=False, non_empty=True)
    problems.enum_list(policy, (*base, "allowedFormats"), MODEL_FORMATS, required=False, non_empty=True)
    bounds = problems.obj(policy, (*base, "parameterCount"), required=False)
    if bounds is None:
        return
    low = _parameter_count(problems, bounds, (*base, "parameterCount", "min"))
    high = _parameter_count(problems, bounds, (*base, "parameterCount", "max"))
    if low is not None and high is not None and low > high:
        problems.add(
            (*base, "parameterCount", "min"),
            f"must not be greater than `{'.'.join(base)}.parameterCount.max` "
            f"({shown(bounds['min'])} > {shown(bounds['max'])})",
        )


def _parameter_count(problems: Problems, bounds: Mapping[str, Any], path: tuple[str, ...]) -> int | None:
    value = bounds.get(path[-1])
    if value is None:
        return None
    if not isinstance(value, int | str) or isinstance(value, bool):
        problems.add(path, f"must be an integer or a string such as 500M, 7B or 1.5T, not {shown(value)}")
        return None
    try:
        return parse_parameter_count(value)
    except QuantityError:
        problems.add(path, f"must be an integer or a string such as 500M, 7B or 1.5T, not {shown(value)}")
        return None


def _placement(problems: Problems, placement: Mapping[str, Any]) -> None:
    base = ("spec", "placement")
    names = problems.items_of(placement, (*base, "deviceClassNames"), required=True, non_empty=True)
    if names is not None:
        for i, name in enumerate(names):
            what = "the name of a DRA DeviceClass"
            problems.dns_name_value(name, (*base, "deviceClassNames", i), required=True, what=what)
        problems.unique(names, (*base, "deviceClassNames"))
    selector = problems.string(placement, (*base, "selector"), required=False, max_length=MAX_SELECTOR_LENGTH)
    if selector is not None:
        error = selector_error(selector)
        if error is not None:
            problems.add((*base, "selector"), f"must be a CEL expression DRA can evaluate: {error}")
    modes = problems.enum_list(
        placement, (*base, "sharingModes"), SHARING_MODES, required=False, non_empty=True
    )
    problems.integer(placement, (*base, "maxAcceleratorsPerReplica"), required=False, minimum=1, maximum=64)
    nodes = problems.integer(placement, (*base, "maxNodesPerReplica"), required=False, minimum=1, maximum=16)
    if nodes is not None and nodes > 1 and modes is not None and "Exclusive" not in modes:
        problems.add(
            (*base, "maxNodesPerReplica"),
            "a replica spans several nodes only on whole devices: `spec.placement.sharingModes` must "
            f"include Exclusive when this is above 1 (it is {nodes})",
        )
    scheduling_problems(problems, placement, base)


def _scaling(problems: Problems, scaling: Mapping[str, Any]) -> int | None:
    """Checks the block; returns ``minReplicas`` when it is a valid number."""
    base = ("spec", "scaling")
    low = problems.integer(scaling, (*base, "minReplicas"), required=False, minimum=0)
    high = problems.integer(scaling, (*base, "maxReplicas"), required=False, minimum=1)
    if low is not None and high is not None and low > high:
        problems.add(
            (*base, "minReplicas"), f"must not be greater than `spec.scaling.maxReplicas` ({low} > {high})"
        )
    problems.dns_name(
        scaling, (*base, "priorityClassName"), required=False, what="the name of a PriorityClass"
    )
    metric = problems.one_of(scaling, (*base, "metric"), SCALING_METRICS, required=False)
    target = problems.integer(scaling, (*base, "target"), required=False, minimum=1)
    if metric == "KVCacheUtilization" and target is not None and target > MAX_PERCENT_TARGET:
        problems.add(
            (*base, "target"),
            f"must be at most {MAX_PERCENT_TARGET} (a percent of the KV cache) when `spec.scaling.metric` "
            f"is `KVCacheUtilization`, not {target}",
        )
    problems.integer(
        scaling,
        (*base, "scaleDownStabilizationSeconds"),
        required=False,
        minimum=0,
        maximum=MAX_SCALE_DOWN_STABILIZATION_SECONDS,
    )
    after = problems.integer(
        scaling,
        (*base, "scaleToZeroAfterSeconds"),
        required=False,
        minimum=MIN_SCALE_TO_ZERO_AFTER_SECONDS,
        maximum=MAX_SCALE_TO_ZERO_AFTER_SECONDS,
    )
    if after is not None and low != 0:
        problems.add(
            (*base, "scaleToZeroAfterSeconds"),
            "only a class with `spec.scaling.minReplicas: 0` scales to zero "
            f"(minReplicas is {1 if low is None else low})",
        )
    return low
