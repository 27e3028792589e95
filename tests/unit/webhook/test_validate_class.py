"""Validation of InferenceServiceClass: one row per rule, every problem reported at once."""

from __future__ import annotations

from typing import Any

import pytest

from testkit.webhook import UNSET, make_class
from webhook.validate_class import class_problems


@pytest.mark.parametrize(
    "klass",
    [
        pytest.param(make_class(), id="the bundled default-llm class is valid"),
        pytest.param(
            make_class(
                spec__scaling=UNSET,
                spec__exposure=UNSET,
                spec__recipes=UNSET,
                spec__placement__selector=UNSET,
                spec__modelPolicy={"allowedEndpointTypes": ["Chat"]},
            ),
            id="a minimal class is valid",
        ),
        pytest.param(
            make_class(spec__modelPolicy__parameterCount={"min": 500_000_000, "max": "1.5T"}),
            id="parameter counts mix integers and suffixes",
        ),
        pytest.param(
            make_class(spec__modelPolicy__parameterCount={"min": "7B", "max": "7B"}),
            id="equal parameter bounds are allowed",
        ),
        pytest.param(
            make_class(spec__scaling={"minReplicas": 2, "maxReplicas": 2}),
            id="equal replica bounds are allowed",
        ),
        pytest.param(
            make_class(spec__scaling={"metric": "KVCacheUtilization", "target": 100}),
            id="a KV cache target of 100 percent is allowed",
        ),
        pytest.param(
            make_class(spec__scaling={"metric": "QueueDepth", "target": 101}),
            id="a queue depth target above 100 is allowed",
        ),
        pytest.param(
            make_class(spec__scaling={"target": 101}),
            id="a target above 100 is allowed with the default metric",
        ),
        pytest.param(
            make_class(
                spec__scaling={"metric": "RunningRequests", "target": 1, "scaleDownStabilizationSeconds": 0}
            ),
            id="the smallest target and no scale-down window are allowed",
        ),
        pytest.param(
            make_class(spec__scaling={"scaleDownStabilizationSeconds": 3600}),
            id="a scale-down window of an hour is allowed",
        ),
        pytest.param(
            make_class(spec__scaling={"minReplicas": 0}), id="scale to zero with the default idle time"
        ),
        pytest.param(
            make_class(spec__scaling={"minReplicas": 0, "scaleToZeroAfterSeconds": 30}),
            id="scale to zero after the shortest idle time",
        ),
        pytest.param(
            make_class(
                spec__placement__selector='device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("40Gi")) >= 0'
                ' && device.attributes["gpu.nvidia.com"].driverVersion.isGreaterThan(semver("550.0.0"))'
            ),
            id="a selector with quantity, compareTo and semver compiles",
        ),
    ],
)
def test_a_valid_class_has_no_problems(klass: dict[str, Any]) -> None:
    assert class_problems(klass) == []


@pytest.mark.parametrize(
    ("klass", "problems"),
    [
        pytest.param(
            make_class(spec__modelPolicy__allowedEndpointTypes=[]),
            ["`spec.modelPolicy.allowedEndpointTypes`: must list at least one item"],
            id="allowedEndpointTypes must not be empty",
        ),
        pytest.param(
            make_class(spec__modelPolicy__allowedEndpointTypes=UNSET),
            ["`spec.modelPolicy.allowedEndpointTypes`: is required: a list with at least one item"],
            id="allowedEndpointTypes is required",
        ),
        pytest.param(
            make_class(spec__modelPolicy__allowedEndpointTypes=["Chat", "Completion"]),
            [
                "`spec.modelPolicy.allowedEndpointTypes[1]`: must be one of `Chat`, `Embeddings` or `Rerank`, "
                'not "Completion"'
            ],
            id="allowedEndpointTypes must be known",
        ),
        pytest.param(
            make_class(spec__modelPolicy__allowedEndpointTypes=["Chat", "Chat"]),
            ['`spec.modelPolicy.allowedEndpointTypes[1]`: must not repeat "Chat"'],
            id="allowedEndpointTypes must not repeat",
        ),
        pytest.param(
            make_class(spec__modelPolicy__allowedSources=["Git"]),
            ['`spec.modelPolicy.allowedSources[0]`: must be one of `HuggingFace` or `Catalog`, not "Git"'],
            id="allowedSources must be known",
        ),
        pytest.param(
            make_class(spec__modelPolicy__allowedFormats=["ONNX"]),
            ['`spec.modelPolicy.allowedFormats[0]`: must be one of `Safetensors` or `GGUF`, not "ONNX"'],
            id="allowedFormats must be known",
        ),
        pytest.param(
            make_class(spec__modelPolicy__parameterCount={"min": "80B", "max": "7B"}),
            [
                "`spec.modelPolicy.parameterCount.min`: must not be greater than `spec.modelPolicy.parameterCount.max` "
                '("80B" > "7B")'
            ],
            id="parameter count min must not exceed max",
        ),
        pytest.param(
            make_class(spec__modelPolicy__parameterCount={"min": "7 billion"}),
            [
                "`spec.modelPolicy.parameterCount.min`: must be an integer or a string such as 500M, 7B or 1.5T, "
                'not "7 billion"'
            ],
            id="a parameter count must parse",
        ),
        pytest.param(
            make_class(spec__placement__deviceClassNames=[]),
            ["`spec.placement.deviceClassNames`: must list at least one item"],
            id="deviceClassNames must not be empty",
        ),
        pytest.param(
            make_class(spec__placement__deviceClassNames=["GPU_Nvidia"]),
            [
                "`spec.placement.deviceClassNames[0]`: must be the name of a DRA DeviceClass: a DNS subdomain name "
                '(lower case letters, digits, `-` and `.`), not "GPU_Nvidia"'
            ],
            id="device class names are DNS subdomains",
        ),
        pytest.param(
            make_class(spec__placement__sharingModes=["Exclusive", "Shared"]),
            [
                "`spec.placement.sharingModes[1]`: must be one of `Exclusive`, `MIG`, `TimeSlicing` or `MPS`, "
                'not "Shared"'
            ],
            id="sharing modes must be known",
        ),
        pytest.param(
            make_class(spec__placement__maxAcceleratorsPerReplica=0),
            ["`spec.placement.maxAcceleratorsPerReplica`: must be at least 1, not 0"],
            id="at least one accelerator per replica",
        ),
        pytest.param(
            make_class(spec__placement__maxNodesPerReplica=0),
            ["`spec.placement.maxNodesPerReplica`: must be at least 1, not 0"],
            id="at least one node per replica",
        ),
        pytest.param(
            make_class(spec__placement__maxNodesPerReplica=2, spec__placement__sharingModes=["MIG"]),
            [
                "`spec.placement.maxNodesPerReplica`: a replica spans several nodes only on whole devices: "
                "`spec.placement.sharingModes` must include Exclusive when this is above 1 (it is 2)"
            ],
            id="multi-node needs Exclusive",
        ),
        pytest.param(
            make_class(spec__scaling={"minReplicas": -1}),
            ["`spec.scaling.minReplicas`: must be at least 0, not -1"],
            id="minReplicas is at least 0",
        ),
        pytest.param(
            make_class(spec__scaling={"minReplicas": 0}, spec__exposure={"authentication": "None"}),
            [
                "`spec.scaling.minReplicas`: 0 (scale to zero) needs `spec.exposure.authentication: Token`: "
                "only a request with the order's token wakes it, and without a token any caller could make "
                "the order take a GPU"
            ],
            id="scale to zero needs a token",
        ),
        pytest.param(
            make_class(spec__scaling={"scaleToZeroAfterSeconds": 300}),
            [
                "`spec.scaling.scaleToZeroAfterSeconds`: only a class with `spec.scaling.minReplicas: 0` "
                "scales to zero (minReplicas is 1)"
            ],
            id="scaleToZeroAfterSeconds only at minReplicas 0",
        ),
        pytest.param(
            make_class(spec__scaling={"minReplicas": 0, "scaleToZeroAfterSeconds": 29}),
            ["`spec.scaling.scaleToZeroAfterSeconds`: must be at least 30, not 29"],
            id="scaleToZeroAfterSeconds at least 30",
        ),
        pytest.param(
            make_class(spec__scaling={"minReplicas": 0, "scaleToZeroAfterSeconds": 86401}),
            ["`spec.scaling.scaleToZeroAfterSeconds`: must be at most 86400, not 86401"],
            id="scaleToZeroAfterSeconds at most a day",
        ),
        pytest.param(
            make_class(spec__scaling={"minReplicas": 4, "maxReplicas": 2}),
            ["`spec.scaling.minReplicas`: must not be greater than `spec.scaling.maxReplicas` (4 > 2)"],
            id="minReplicas must not exceed maxReplicas",
        ),
        pytest.param(
            make_class(spec__scaling={"minReplicas": "two"}),
            ['`spec.scaling.minReplicas`: must be an integer, not "two"'],
            id="replica bounds are integers",
        ),
        pytest.param(
            make_class(spec__scaling={"metric": "KVCacheUtilization", "target": 101}),
            [
                "`spec.scaling.target`: must be at most 100 (a percent of the KV cache) when "
                "`spec.scaling.metric` is `KVCacheUtilization`, not 101"
            ],
            id="a KV cache target is a percent",
        ),
        pytest.param(
            make_class(spec__scaling={"metric": "CPU"}),
            [
                "`spec.scaling.metric`: must be one of `QueueDepth`, `KVCacheUtilization` or "
                '`RunningRequests`, not "CPU"'
            ],
            id="the metric is one of the runtime's signals",
        ),
        pytest.param(
            make_class(spec__scaling={"target": 0}),
            ["`spec.scaling.target`: must be at least 1, not 0"],
            id="the target is at least 1",
        ),
        pytest.param(
            make_class(spec__scaling={"metric": "KVCacheUtilization", "target": "80%"}),
            ['`spec.scaling.target`: must be an integer, not "80%"'],
            id="the target is an integer",
        ),
        pytest.param(
            make_class(spec__scaling={"scaleDownStabilizationSeconds": -1}),
            ["`spec.scaling.scaleDownStabilizationSeconds`: must be at least 0, not -1"],
            id="the scale-down window is not negative",
        ),
        pytest.param(
            make_class(spec__scaling={"scaleDownStabilizationSeconds": 3601}),
            ["`spec.scaling.scaleDownStabilizationSeconds`: must be at most 3600, not 3601"],
            id="the scale-down window is at most an hour",
        ),
        pytest.param(
            make_class(spec__exposure={"type": "Public", "authentication": "Basic"}),
            [
                '`spec.exposure.type`: must be one of `ClusterLocal` or `External`, not "Public"',
                '`spec.exposure.authentication`: must be one of `Token` or `None`, not "Basic"',
            ],
            id="exposure type and authentication must be known",
        ),
        pytest.param(
            make_class(spec__recipes=["vllm", "vllm"]),
            ['`spec.recipes[1]`: must not repeat "vllm"'],
            id="recipes must not repeat",
        ),
        pytest.param(
            make_class(spec__placement=UNSET, spec__modelPolicy=UNSET),
            ["`spec.modelPolicy`: is required", "`spec.placement`: is required"],
            id="model policy and placement are required",
        ),
    ],
)
def test_an_invalid_class_is_refused_with_its_path(klass: dict[str, Any], problems: list[str]) -> None:
    assert class_problems(klass) == problems


@pytest.mark.parametrize(
    ("selector", "position"),
    [
        pytest.param(
            'device.attributes["gpu.nvidia.com"].productName.matches("H100"',
            "line 1, column",
            id="a selector with a missing parenthesis is refused with its position",
        ),
        pytest.param(
            'device.attributes["gpu.nvidia.com"].productName.startsWithh("H")',
            "line 1, column",
            id="a selector calling an unknown function is refused with its position",
        ),
    ],
)
def test_a_selector_that_does_not_compile_is_refused_with_the_position(selector: str, position: str) -> None:
    (problem,) = class_problems(make_class(spec__placement__selector=selector))
    assert problem.startswith("`spec.placement.selector`: must be a CEL expression DRA can evaluate: ")
    assert position in problem


def test_all_problems_of_a_class_are_reported_at_once() -> None:
    klass = make_class(
        spec__modelPolicy__allowedEndpointTypes=[],
        spec__placement__selector="device.(",
        spec__scaling={"minReplicas": 3, "maxReplicas": 1},
    )
    paths = [p.split(":")[0] for p in class_problems(klass)]
    assert paths == [
        "`spec.modelPolicy.allowedEndpointTypes`",
        "`spec.placement.selector`",
        "`spec.scaling.minReplicas`",
    ]


@pytest.mark.parametrize(
    ("selector", "problems"),
    [
        pytest.param({"matchLabels": {"kubernetes.io/metadata.name": "support"}}, [], id="a valid selector"),
        pytest.param(
            {"matchExpressions": [{"key": "team", "operator": "In"}]},
            [
                "`spec.namespaceSelector.matchExpressions[0].values`: must list at least one value when `operator` is `In`"
            ],
            id="In without values",
        ),
        pytest.param(
            {"matchLabels": {"team": "no spaces"}},
            ['`spec.namespaceSelector.matchLabels.team`: must be a label value, not "no spaces"'],
            id="a bad label value",
        ),
        pytest.param(
            "team=support",
            ['`spec.namespaceSelector`: must be an object (a label selector), not "team=support"'],
            id="a selector string",
        ),
    ],
)
def test_the_namespace_selector_is_checked_with_its_path(selector: Any, problems: list[str]) -> None:
    assert class_problems(make_class(spec__namespaceSelector=selector)) == problems
