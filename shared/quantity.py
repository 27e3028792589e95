"""Parsing of Kubernetes quantities and of parameter counts such as ``500M``, ``7B``, ``1.5T``."""

from __future__ import annotations

import math
import re
from decimal import Decimal, InvalidOperation

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "": Decimal(1),
    "k": Decimal("1e3"),
    "M": Decimal("1e6"),
    "G": Decimal("1e9"),
    "T": Decimal("1e12"),
    "P": Decimal("1e15"),
    "E": Decimal("1e18"),
}
_QUANTITY = re.compile(
    r"^([+-]?[0-9]+(?:\.[0-9]*)?|[+-]?\.[0-9]+)(?:[eE]([+-]?[0-9]+))?(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?$"
)
_PARAMS = re.compile(r"^([0-9]+(?:\.[0-9]+)?)([KMBT])$|^([0-9]+)()$")
_PARAM_SUFFIX = {"": 1, "K": 10**3, "M": 10**6, "B": 10**9, "T": 10**12}

GIB = 2**30


class QuantityError(ValueError):
    """The text is not a quantity of the expected kind."""


def parse_quantity(text: str | int | float) -> Decimal:
    """A Kubernetes quantity (``40Gi``, ``500m``, ``1e3``, ``4``) as an exact Decimal."""
    if isinstance(text, int | float):
        return Decimal(str(text))
    m = _QUANTITY.match(text.strip())
    if not m:
        raise QuantityError(f"{text!r} is not a Kubernetes quantity")
    number, exponent, suffix = m.group(1), m.group(2), m.group(3) or ""
    try:
        value = Decimal(number)
    except InvalidOperation as e:  # pragma: no cover - the regex admits only decimals
        raise QuantityError(f"{text!r} is not a Kubernetes quantity") from e
    if exponent is not None:
        if suffix:
            raise QuantityError(f"{text!r} mixes an exponent and a suffix")
        value *= Decimal(10) ** int(exponent)
    elif suffix in _BINARY:
        value *= _BINARY[suffix]
    else:
        value *= _DECIMAL[suffix]
    return value


def parse_bytes(text: str | int | float) -> int:
    """A quantity of bytes, rounded up to a whole byte (the renderer sizes probes from volumes)."""
    return math.ceil(parse_quantity(text))


def parse_parameter_count(value: int | str) -> int:
    """``500M``, ``7B``, ``1.5T`` or an integer (or its string) as an integer parameter count."""
    if isinstance(value, bool):
        raise QuantityError("a parameter count must be an integer or a string such as 7B")
    if isinstance(value, int):
        if value < 0:
            raise QuantityError(f"{value} is negative")
        return value
    m = _PARAMS.match(value.strip())
    if not m:
        raise QuantityError(f"{value!r} is not a parameter count: use an integer or 500M, 7B, 1.5T")
    number = m.group(1) or m.group(3)
    suffix = m.group(2) or ""
    return int(Decimal(number) * _PARAM_SUFFIX[suffix])


def format_gib(n_bytes: int | float) -> str:
    """Bytes as a short GiB figure for messages: ``41.2 GiB``."""
    return f"{n_bytes / GIB:.1f} GiB"


def to_quantity_gi(n_bytes: int) -> str:
    """Bytes as a whole Gi quantity, rounded up: ``24Gi``."""
    return f"{max(1, math.ceil(n_bytes / GIB))}Gi"
