"""The DRA CEL environment: what compiles, what a device selector answers, what is an error."""

from __future__ import annotations

from typing import Any

import pytest

from shared.cel import CelError, DeviceView, Semver, compile_selector, device_view, selector_error

A100 = {
    "name": "gpu-0",
    "attributes": {
        "productName": {"string": "NVIDIA A100-SXM4-80GB"},
        "cudaComputeCapability": {"version": "8.0.0"},
        "index": {"int": 0},
        "migCapable": {"bool": True},
        "example.com/rack": {"string": "r1"},
    },
    "capacity": {"memory": {"value": "80Gi"}},
}


def make_device(**changes: Any) -> DeviceView:
    raw = {**A100, **changes}
    return device_view("gpu.nvidia.com", raw)


ATTR = 'device.attributes["gpu.nvidia.com"]'
CAP = 'device.capacity["gpu.nvidia.com"]'


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        (f'{ATTR}.productName.matches("H100|A100")', True),
        (f'{ATTR}.productName.matches("^NVIDIA L4$")', False),
        (f'{CAP}.memory.compareTo(quantity("40Gi")) >= 0', True),
        (f'{CAP}.memory.compareTo(quantity("81Gi")) >= 0', False),
        (f'{CAP}.memory.isGreaterThan(quantity("80G"))', True),
        (f'{CAP}.memory.isLessThan(quantity("1Ti"))', True),
        (f'{ATTR}.cudaComputeCapability.isGreaterThan(semver("7.5.0"))', True),
        (f'{ATTR}.cudaComputeCapability.isGreaterThan(semver("8.0.0"))', False),
        (f'{ATTR}.cudaComputeCapability.compareTo(semver("8.0.0")) == 0', True),
        (f"{ATTR}.cudaComputeCapability.major() == 8", True),
        ('device.driver == "gpu.nvidia.com"', True),
        (f'{ATTR}.productName.lowerAscii().contains("a100")', True),
        (f'{ATTR}.productName.upperAscii().startsWith("NVIDIA A100")', True),
        (f"{ATTR}.migCapable && {ATTR}.index == 0", True),
        ('device.attributes["example.com"].rack == "r1"', True),
        ('"rack" in device.attributes["other.example.com"]', False),
        (f"has({ATTR}.productName)", True),
        ('semver("v1.2", true).minor() == 2', True),
        ('isSemver("1.2") || isQuantity("1Gi")', True),
        ('quantity("1Gi").add(1).isGreaterThan(quantity("1Gi"))', True),
        ('quantity("1.5").isInteger()', False),
    ],
)
def test_a_selector_answers_for_a_device(expression: str, expected: bool) -> None:
    assert selector_error(expression) is None
    assert compile_selector(expression).matches(make_device()) is expected


@pytest.mark.parametrize(
    ("expression", "fragment"),
    [
        ("device.attributes[", "line 1, column 18"),
        ("device.driver ==\n  ==", "line 2, column 3"),
        (f"{ATTR}.productName.shout()", f"'shout' at line 1, column {len(ATTR + '.productName.') + 1}"),
        ("reduce([1], x, x) == 1 && now() > 0", "undeclared function"),
        ("", "empty"),
    ],
)
def test_a_selector_that_does_not_compile_is_refused_with_its_position(
    expression: str, fragment: str
) -> None:
    error = selector_error(expression)
    assert error is not None
    assert fragment in error
    with pytest.raises(CelError, match=r"line|empty|undeclared"):
        compile_selector(expression)


@pytest.mark.parametrize(
    ("expression", "fragment"),
    [
        (f"{ATTR}.missing == 1", "missing"),
        (f"{ATTR}.index", "must evaluate to a bool"),
        (f'{CAP}.memory < quantity("1Gi")', "failed"),
        ('quantity("not a quantity").sign() == 1', "failed"),
        (f'{ATTR}.productName.compareTo(semver("1.0.0")) == 0', "failed"),
    ],
)
def test_a_selector_whose_evaluation_fails_raises(expression: str, fragment: str) -> None:
    assert selector_error(expression) is None
    with pytest.raises(CelError, match=fragment):
        compile_selector(expression).matches(make_device())


@pytest.mark.parametrize(
    ("low", "high"),
    [("1.0.0", "1.0.1"), ("1.0.0-rc.1", "1.0.0"), ("1.0.0-alpha", "1.0.0-alpha.1"), ("8.0.0", "8.9.0")],
)
def test_semver_orders_by_precedence(low: str, high: str) -> None:
    assert Semver.parse(low) < Semver.parse(high)


def test_a_device_with_an_unreadable_attribute_is_an_error() -> None:
    with pytest.raises(CelError, match="productName"):
        make_device(attributes={"productName": {"string": "x", "int": 1}})
