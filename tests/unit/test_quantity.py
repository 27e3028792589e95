"""Kubernetes quantities and parameter counts."""

from __future__ import annotations

from decimal import Decimal

import pytest

from shared.quantity import QuantityError, parse_parameter_count, parse_quantity, to_quantity_gi


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("40Gi", Decimal(40 * 2**30)),
        ("500m", Decimal("0.5")),
        ("4", Decimal(4)),
        ("1e3", Decimal(1000)),
        ("1.5Ki", Decimal(1536)),
        ("2M", Decimal(2_000_000)),
        (".5", Decimal("0.5")),
        (8, Decimal(8)),
    ],
)
def test_a_quantity_parses_exactly(text: str | int, value: Decimal) -> None:
    assert parse_quantity(text) == value


@pytest.mark.parametrize("text", ["", "Gi", "4GB", "1e3Gi", "four", "--1"])
def test_a_malformed_quantity_is_refused(text: str) -> None:
    with pytest.raises(QuantityError):
        parse_quantity(text)


@pytest.mark.parametrize(
    ("value", "count"),
    [
        ("500M", 500_000_000),
        ("7B", 7_000_000_000),
        ("1.5T", 1_500_000_000_000),
        ("12", 12),
        (42, 42),
        ("3K", 3000),
    ],
)
def test_a_parameter_count_parses(value: str | int, count: int) -> None:
    assert parse_parameter_count(value) == count


@pytest.mark.parametrize("value", ["7b", "1.5", "7 B", "B", "-1", True, -3])
def test_a_malformed_parameter_count_is_refused(value: str | int) -> None:
    with pytest.raises(QuantityError):
        parse_parameter_count(value)


def test_whole_gi_round_up() -> None:
    assert to_quantity_gi(2**30 + 1) == "2Gi"
    assert to_quantity_gi(0) == "1Gi"
