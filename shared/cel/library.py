"""The functions a DRA selector may call: CEL's standard ones plus the Kubernetes libraries. Pure.

The quantity library (``quantity``, ``isQuantity``, ``compareTo``, ``isGreaterThan``, ``isLessThan``,
``add``, ``sub``, ``sign``, ``isInteger``, ``asInteger``, ``asApproximateFloat``), the semver library
(``semver``, ``isSemver``, ``major``, ``minor``, ``patch`` and the same comparisons) and the string
extensions (``lowerAscii``, ``upperAscii``, ``trim``, ``split``, ``join``, ``replace``, ``indexOf``,
``lastIndexOf``, ``charAt``, ``substring``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from celpy import celtypes

from shared.cel.errors import CelError
from shared.cel.semver import Semver
from shared.quantity import QuantityError, parse_quantity


@dataclass(frozen=True, order=False)
class Quantity:
    """A Kubernetes quantity as CEL sees it: compare with ``compareTo``/``isGreaterThan``, not ``<``."""

    value: Decimal

    def __str__(self) -> str:
        return str(self.value)


def _quantity(text: Any) -> Quantity:
    if not isinstance(text, str):
        raise TypeError("quantity() takes a string")
    try:
        return Quantity(parse_quantity(text))
    except QuantityError as e:
        raise ValueError(str(e)) from e


def _is_quantity(text: Any) -> celtypes.BoolType:
    try:
        _quantity(text)
    except ValueError:
        return celtypes.BoolType(False)
    return celtypes.BoolType(True)


def _semver(text: Any, normalize: Any = False) -> Semver:
    if not isinstance(text, str):
        raise TypeError("semver() takes a string")
    try:
        return Semver.parse(text, normalize=bool(normalize))
    except CelError as e:
        raise ValueError(str(e)) from e


def _is_semver(text: Any, normalize: Any = False) -> celtypes.BoolType:
    try:
        _semver(text, normalize)
    except ValueError:
        return celtypes.BoolType(False)
    return celtypes.BoolType(True)


def _ordered(a: Any, b: Any) -> tuple[Any, Any]:
    if isinstance(a, Quantity) and isinstance(b, Quantity):
        return a.value, b.value
    if isinstance(a, Semver) and isinstance(b, Semver):
        return a, b
    raise TypeError(f"no such overload for {type(a).__name__} and {type(b).__name__}")


def _compare_to(a: Any, b: Any) -> celtypes.IntType:
    x, y = _ordered(a, b)
    return celtypes.IntType((x > y) - (x < y))


def _is_greater_than(a: Any, b: Any) -> celtypes.BoolType:
    x, y = _ordered(a, b)
    return celtypes.BoolType(x > y)


def _is_less_than(a: Any, b: Any) -> celtypes.BoolType:
    x, y = _ordered(a, b)
    return celtypes.BoolType(x < y)


def _as_quantity_operand(value: Any) -> Decimal:
    if isinstance(value, Quantity):
        return value.value
    if isinstance(value, int) and not isinstance(value, bool):
        return Decimal(value)
    raise TypeError("add and sub take a quantity or an int")


def _add(a: Any, b: Any) -> Quantity:
    if not isinstance(a, Quantity):
        raise TypeError("add() is a quantity method")
    return Quantity(a.value + _as_quantity_operand(b))


def _sub(a: Any, b: Any) -> Quantity:
    if not isinstance(a, Quantity):
        raise TypeError("sub() is a quantity method")
    return Quantity(a.value - _as_quantity_operand(b))


def _quantity_only(a: Any) -> Decimal:
    if not isinstance(a, Quantity):
        raise TypeError("a quantity method")
    return a.value


def _sign(a: Any) -> celtypes.IntType:
    v = _quantity_only(a)
    return celtypes.IntType((v > 0) - (v < 0))


def _is_integer(a: Any) -> celtypes.BoolType:
    v = _quantity_only(a)
    return celtypes.BoolType(v == v.to_integral_value() and abs(v) < 2**63)


def _as_integer(a: Any) -> celtypes.IntType:
    v = _quantity_only(a)
    if v != v.to_integral_value() or abs(v) >= 2**63:
        raise ValueError("the quantity is not an integer")
    return celtypes.IntType(int(v))


def _as_float(a: Any) -> celtypes.DoubleType:
    return celtypes.DoubleType(float(_quantity_only(a)))


def _semver_part(part: str) -> Callable[[Any], celtypes.IntType]:
    def get(a: Any) -> celtypes.IntType:
        if not isinstance(a, Semver):
            raise TypeError(f"{part}() is a semver method")
        return celtypes.IntType(getattr(a, part))

    return get


def _string(a: Any) -> str:
    if not isinstance(a, str):
        raise TypeError("a string method")
    return a


def _lower_ascii(a: Any) -> celtypes.StringType:
    return celtypes.StringType(_string(a).translate(_LOWER))


def _upper_ascii(a: Any) -> celtypes.StringType:
    return celtypes.StringType(_string(a).translate(_UPPER))


_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
_UPPER = str.maketrans("abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ")


def _trim(a: Any) -> celtypes.StringType:
    return celtypes.StringType(_string(a).strip())


def _split(a: Any, sep: Any, limit: Any = -1) -> celtypes.ListType:
    text, sep = _string(a), _string(sep)
    n = int(limit)
    if n == 0:
        return celtypes.ListType()
    parts = text.split(sep, n - 1) if n > 0 else text.split(sep)
    return celtypes.ListType(celtypes.StringType(p) for p in parts)


def _join(items: Any, sep: Any = "") -> celtypes.StringType:
    if not isinstance(items, list):
        raise TypeError("join() is a list method")
    return celtypes.StringType(_string(sep).join(_string(i) for i in items))


def _replace(a: Any, old: Any, new: Any, limit: Any = -1) -> celtypes.StringType:
    return celtypes.StringType(_string(a).replace(_string(old), _string(new), int(limit)))


def _index_of(a: Any, sub: Any, start: Any = 0) -> celtypes.IntType:
    return celtypes.IntType(_string(a).find(_string(sub), int(start)))


def _last_index_of(a: Any, sub: Any) -> celtypes.IntType:
    return celtypes.IntType(_string(a).rfind(_string(sub)))


def _char_at(a: Any, i: Any) -> celtypes.StringType:
    text = _string(a)
    index = int(i)
    if not 0 <= index <= len(text):
        raise ValueError("index out of range")
    return celtypes.StringType(text[index : index + 1])


def _substring(a: Any, start: Any, end: Any = None) -> celtypes.StringType:
    text = _string(a)
    s, e = int(start), len(text) if end is None else int(end)
    if not 0 <= s <= e <= len(text):
        raise ValueError("index out of range")
    return celtypes.StringType(text[s:e])


EXTENSIONS: dict[str, Callable[..., Any]] = {
    "quantity": _quantity,
    "isQuantity": _is_quantity,
    "semver": _semver,
    "isSemver": _is_semver,
    "compareTo": _compare_to,
    "isGreaterThan": _is_greater_than,
    "isLessThan": _is_less_than,
    "add": _add,
    "sub": _sub,
    "sign": _sign,
    "isInteger": _is_integer,
    "asInteger": _as_integer,
    "asApproximateFloat": _as_float,
    "major": _semver_part("major"),
    "minor": _semver_part("minor"),
    "patch": _semver_part("patch"),
    "lowerAscii": _lower_ascii,
    "upperAscii": _upper_ascii,
    "trim": _trim,
    "split": _split,
    "join": _join,
    "replace": _replace,
    "indexOf": _index_of,
    "lastIndexOf": _last_index_of,
    "charAt": _char_at,
    "substring": _substring,
}

_STANDARD = frozenset(
    {
        # macros
        "has",
        "all",
        "exists",
        "exists_one",
        "map",
        "filter",
        # functions and methods
        "size",
        "contains",
        "startsWith",
        "endsWith",
        "matches",
        "type",
        "dyn",
        "bool",
        "bytes",
        "double",
        "duration",
        "int",
        "uint",
        "string",
        "timestamp",
        "getDate",
        "getDayOfMonth",
        "getDayOfWeek",
        "getDayOfYear",
        "getFullYear",
        "getMonth",
        "getHours",
        "getMilliseconds",
        "getMinutes",
        "getSeconds",
    }
)

ALLOWED_FUNCTIONS: frozenset[str] = _STANDARD | frozenset(EXTENSIONS)
"""Every function or method name a selector may call."""
