"""The DRA CEL environment: compile and evaluate device selectors like the Kubernetes scheduler does.

Called by the webhook (``selector_error``, to refuse a class whose ``placement.selector`` cannot be
judged) and by the planner (``compile_selector`` then ``Selector.matches`` for every device).

The environment follows ``k8s.io/dynamic-resource-allocation/cel``: one variable, ``device``, with
``device.driver`` (string), ``device.attributes[domain].name`` (bool, int, string or semver) and
``device.capacity[domain].name`` (quantity). A domain that the device does not have is an empty map,
so ``"x" in device.attributes["other.example.com"]`` is false; reading a missing name is an error,
as in Kubernetes. The functions are CEL's standard ones plus the Kubernetes libraries a DRA
expression may use: the quantity library (``quantity``, ``isQuantity``, ``compareTo``,
``isGreaterThan``, ``isLessThan``, ``add``, ``sub``, ``sign``, ``isInteger``, ``asInteger``,
``asApproximateFloat``), the semver library (``semver``, ``isSemver``, ``major``, ``minor``,
``patch`` and the same comparisons) and the string extensions (``lowerAscii``, ``upperAscii``,
``trim``, ``split``, ``join``, ``replace``, ``indexOf``, ``lastIndexOf``, ``charAt``,
``substring``). Any other function is refused when the expression is compiled, because cel-python
only checks the syntax.

Pure: no I/O.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import celpy
import lark
from celpy import celtypes
from celpy.celparser import CELParseError
from celpy.evaluation import CELEvalError

from shared.quantity import QuantityError, parse_quantity

__all__ = [
    "ALLOWED_FUNCTIONS",
    "CelError",
    "DeviceView",
    "Quantity",
    "Selector",
    "Semver",
    "compile_selector",
    "device_view",
    "selector_error",
]

_SEMVER = re.compile(
    r"^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)"
    r"(?:-((?:0|[1-9][0-9]*|[0-9]*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9][0-9]*|[0-9]*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
    r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$"
)


class CelError(ValueError):
    """A selector that does not compile, or whose evaluation is an error or not a bool."""


@dataclass(frozen=True, order=False)
class Quantity:
    """A Kubernetes quantity as CEL sees it: compare with ``compareTo``/``isGreaterThan``, not ``<``."""

    value: Decimal

    def __str__(self) -> str:
        return str(self.value)


@functools.total_ordering
@dataclass(frozen=True)
class Semver:
    """A semantic version (semver 2.0 precedence: build metadata is ignored)."""

    major: int
    minor: int
    patch: int
    pre: tuple[str, ...] = ()
    build: str = ""

    @classmethod
    def parse(cls, text: str, *, normalize: bool = False) -> Semver:
        """``1.2.3``, ``1.2.3-rc.1``; with ``normalize``, also ``v1.2`` and leading zeros."""
        if normalize:
            text = _normalize_semver(text)
        m = _SEMVER.match(text)
        if not m:
            raise CelError(f"{text!r} is not a semantic version")
        pre = tuple(m.group(4).split(".")) if m.group(4) else ()
        return cls(int(m.group(1)), int(m.group(2)), int(m.group(3)), pre, m.group(5) or "")

    @functools.cached_property
    def _precedence(self) -> tuple[int, int, int, int, tuple[tuple[int, int, str], ...]]:
        pre = tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in self.pre)
        return (self.major, self.minor, self.patch, 0 if self.pre else 1, pre)

    def _key(self) -> tuple[int, int, int, int, tuple[tuple[int, int, str], ...]]:
        return self._precedence

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Semver):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __lt__(self, other: Semver) -> bool:
        return self._key() < other._key()

    def __str__(self) -> str:
        text = f"{self.major}.{self.minor}.{self.patch}"
        if self.pre:
            text += "-" + ".".join(self.pre)
        return text + (f"+{self.build}" if self.build else "")


def _normalize_semver(text: str) -> str:
    """Kubernetes' lenient form: drop a leading v, leading zeros, and pad a missing minor or patch."""
    text = text[1:] if text[:1] in ("v", "V") else text
    m = re.match(r"^([0-9]+(?:\.[0-9]+){0,2})(.*)$", text)
    if not m:
        return text
    parts = [str(int(p)) for p in m.group(1).split(".")]
    return ".".join(parts + ["0"] * (3 - len(parts))) + m.group(2)


AttributeValue = bool | int | str | Semver


@dataclass(frozen=True)
class DeviceView:
    """One device as a DRA CEL expression sees it."""

    driver: str
    attributes: Mapping[str, Mapping[str, AttributeValue]] = field(default_factory=dict)
    capacity: Mapping[str, Mapping[str, Decimal]] = field(default_factory=dict)


def device_view(driver: str, device: Mapping[str, Any]) -> DeviceView:
    """The view of a raw ResourceSlice device (``resource.k8s.io/v1``) published by ``driver``.

    Unqualified attribute and capacity names belong to the driver's domain; ``domain/name`` names
    to their own domain. A value that cannot be read raises CelError.
    """
    attributes: dict[str, dict[str, AttributeValue]] = {}
    for name, raw in (device.get("attributes") or {}).items():
        domain, short = _qualify(driver, name)
        attributes.setdefault(domain, {})[short] = _attribute_value(name, raw)
    capacity: dict[str, dict[str, Decimal]] = {}
    for name, raw in (device.get("capacity") or {}).items():
        domain, short = _qualify(driver, name)
        value = raw.get("value") if isinstance(raw, Mapping) else raw
        if not isinstance(value, str | int | float) or isinstance(value, bool):
            raise CelError(f"capacity {name!r} is not a quantity: {value!r}")
        try:
            capacity.setdefault(domain, {})[short] = parse_quantity(value)
        except QuantityError as e:
            raise CelError(f"capacity {name!r} is not a quantity: {value!r}") from e
    return DeviceView(driver=driver, attributes=attributes, capacity=capacity)


def _qualify(driver: str, name: str) -> tuple[str, str]:
    domain, sep, short = name.rpartition("/")
    return (domain, short) if sep else (driver, name)


def _attribute_value(name: str, raw: Any) -> AttributeValue:
    if not isinstance(raw, Mapping) or len(raw) != 1:
        raise CelError(f"attribute {name!r} must have exactly one of bool, int, string, version")
    ((kind, value),) = raw.items()
    if kind == "bool" and isinstance(value, bool):
        return value
    if kind == "int" and isinstance(value, int) and not isinstance(value, bool):
        return value
    if kind == "string" and isinstance(value, str):
        return value
    if kind == "version" and isinstance(value, str):
        return Semver.parse(value)
    raise CelError(f"attribute {name!r} has an unreadable value {raw!r}")


# --- the functions of the environment -------------------------------------------------------------


class _DomainMap(celtypes.MapType):
    """``device.attributes`` / ``device.capacity``: a domain the device lacks is an empty map."""

    def __getitem__(self, key: Any) -> Any:
        if key in self:
            return super().__getitem__(key)
        return celtypes.MapType()


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


_EXTENSIONS: dict[str, Callable[..., Any]] = {
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

ALLOWED_FUNCTIONS: frozenset[str] = _STANDARD | frozenset(_EXTENSIONS)
"""Every function or method name a selector may call."""


def _calls(tree: lark.Tree[lark.Token]) -> Iterator[tuple[str, int | None, int | None]]:
    """Every called function or method name in the tree, with its line and column."""
    for node in tree.iter_subtrees():
        token: Any = None
        if node.data == "member_dot_arg" or node.data in ("ident_arg", "dot_ident_arg"):
            token = node.children[1] if node.data == "member_dot_arg" else node.children[0]
        if isinstance(token, lark.Token):
            yield str(token), token.line, token.column


def _compile(expr: str) -> lark.Tree[lark.Token]:
    if not expr.strip():
        raise CelError("the selector is empty")
    try:
        tree = celpy.Environment().compile(expr)
    except CELParseError as e:
        raise CelError(_syntax_message(expr, e.line, e.column)) from e
    unknown = sorted(
        {(line or 0, col or 0, name) for name, line, col in _calls(tree) if name not in ALLOWED_FUNCTIONS}
    )
    if unknown:
        line, col, name = unknown[0]
        raise CelError(
            f"undeclared function {name!r} at line {line}, column {col}: a DRA selector may use CEL's "
            "standard functions, quantity(), semver(), their methods, and the string extensions"
        )
    return tree


def _syntax_message(expr: str, line: int | None, column: int | None) -> str:
    if not line or not column:
        return "syntax error: the selector is not a CEL expression"
    lines = expr.splitlines() or [""]
    text = lines[line - 1] if line <= len(lines) else ""
    near = text[column - 1 : column + 9].strip()
    what = f"unexpected {near!r}" if near else "unexpected end of the expression"
    return f"syntax error at line {line}, column {column}: {what}"


def selector_error(expr: str) -> str | None:
    """None when the selector compiles in the DRA environment, else a message with line and column."""
    try:
        _compile(expr)
    except CelError as e:
        return str(e)
    return None


@dataclass(frozen=True)
class Selector:
    """A compiled selector. ``matches`` evaluates it against one device."""

    expression: str
    _runner: Any = field(repr=False, compare=False)

    def matches(self, device: DeviceView) -> bool:
        """True or False; CelError when the evaluation fails or the result is not a bool."""
        try:
            result = self._runner.evaluate({"device": _to_cel(device)})
        except CELEvalError as e:
            raise CelError(f"the selector failed on a device of {device.driver}: {_eval_message(e)}") from e
        except (CelError, ValueError, TypeError, KeyError, AttributeError) as e:
            raise CelError(f"the selector failed on a device of {device.driver}: {e}") from e
        if isinstance(result, CELEvalError):
            raise CelError(f"the selector failed on a device of {device.driver}: {_eval_message(result)}")
        if not isinstance(result, celtypes.BoolType | bool):
            raise CelError(f"the selector must evaluate to a bool, not {type(result).__name__}")
        return bool(result)


def compile_selector(expr: str) -> Selector:
    """Compile a selector; raises CelError (the same message ``selector_error`` returns)."""
    tree = _compile(expr)
    # a fresh Environment per selector: celpy's keeps the last program it made
    return Selector(expression=expr, _runner=celpy.Environment().program(tree, functions=dict(_EXTENSIONS)))


def _eval_message(e: CELEvalError) -> str:
    text = str(e.args[0]) if e.args else "evaluation error"
    if len(e.args) > 2 and e.args[2]:
        text += f" ({e.args[2]})"
    return text


def _to_cel(device: DeviceView) -> celtypes.MapType:
    attributes = _DomainMap(
        {
            celtypes.StringType(domain): celtypes.MapType(
                {celtypes.StringType(k): _cel_value(v) for k, v in values.items()}
            )
            for domain, values in device.attributes.items()
        }
    )
    capacity = _DomainMap(
        {
            celtypes.StringType(domain): celtypes.MapType(
                {celtypes.StringType(k): Quantity(v) for k, v in values.items()}
            )
            for domain, values in device.capacity.items()
        }
    )
    return celtypes.MapType(
        {
            celtypes.StringType("driver"): celtypes.StringType(device.driver),
            celtypes.StringType("attributes"): attributes,
            celtypes.StringType("capacity"): capacity,
        }
    )


def _cel_value(value: AttributeValue) -> Any:
    if isinstance(value, bool):
        return celtypes.BoolType(value)
    if isinstance(value, int):
        return celtypes.IntType(value)
    if isinstance(value, str):
        return celtypes.StringType(value)
    return value
