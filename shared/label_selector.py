"""Label selectors (meta/v1 LabelSelector): their syntax and whether one selects a set of labels. Pure.

``problems`` checks a selector as the API server does for a Kubernetes object's selector (the label
key and value syntax, a known operator, values present exactly when the operator needs them) and
says what is wrong with a path relative to the selector. ``selects`` answers with the Kubernetes
semantics: every ``matchLabels`` pair and every ``matchExpressions`` requirement must hold; an
empty selector selects everything. A selector with a problem selects nothing (a class whose
selector is broken is open to no namespace, never to all of them).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from shared.api.scheduling import LABEL_KEY_PATTERN, LABEL_VALUE_PATTERN

OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")
_KEY = re.compile(LABEL_KEY_PATTERN)
_VALUE = re.compile(LABEL_VALUE_PATTERN)

Path = tuple[str | int, ...]


def label_key_ok(key: object) -> bool:
    """A label key: an optional DNS-subdomain prefix (at most 253) and ``/``, a name of at most 63."""
    if not isinstance(key, str) or not _KEY.match(key):
        return False
    prefix, _, name = key.rpartition("/")
    return len(prefix) <= 253 and len(name) <= 63


def label_value_ok(value: object) -> bool:
    return isinstance(value, str) and bool(_VALUE.match(value))


def _shown(value: object) -> str:
    text = f'"{value}"' if isinstance(value, str) else repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def problems(selector: object) -> list[tuple[Path, str]]:
    """Every problem of a raw selector, each with its path inside the selector, in field order."""
    if not isinstance(selector, Mapping):
        return [((), f"must be an object (a label selector), not {_shown(selector)}")]
    out: list[tuple[Path, str]] = []
    labels = selector.get("matchLabels")
    if labels is not None and not isinstance(labels, Mapping):
        out.append((("matchLabels",), f"must be an object of labels, not {_shown(labels)}"))
    for key, value in (labels or {}).items() if isinstance(labels, Mapping) else ():
        if not label_key_ok(key):
            out.append((("matchLabels", str(key)), f"the key must be a label key, not {_shown(key)}"))
        if not label_value_ok(value):
            out.append((("matchLabels", str(key)), f"must be a label value, not {_shown(value)}"))
    exprs = selector.get("matchExpressions")
    if exprs is not None and not isinstance(exprs, list):
        return [*out, (("matchExpressions",), f"must be a list, not {_shown(exprs)}")]
    for i, expr in enumerate(exprs or []):
        out.extend((("matchExpressions", i, *p), m) for p, m in _requirement(expr))
    return out


def _requirement(expr: object) -> list[tuple[Path, str]]:
    if not isinstance(expr, Mapping):
        return [((), f"must be an object, not {_shown(expr)}")]
    out: list[tuple[Path, str]] = []
    if not label_key_ok(expr.get("key")):
        out.append((("key",), f"must be a label key, not {_shown(expr.get('key'))}"))
    op = expr.get("operator")
    if op not in OPERATORS:
        out.append(
            (("operator",), f"must be one of `In`, `NotIn`, `Exists` or `DoesNotExist`, not {_shown(op)}")
        )
        return out
    values = expr.get("values")
    if values is not None and not isinstance(values, list):
        return [*out, (("values",), f"must be a list, not {_shown(values)}")]
    if op in ("In", "NotIn") and not values:
        out.append((("values",), f"must list at least one value when `operator` is `{op}`"))
    if op in ("Exists", "DoesNotExist") and values:
        out.append((("values",), f"must be empty when `operator` is `{op}`"))
    for j, v in enumerate(values or []):
        if not label_value_ok(v):
            out.append((("values", j), f"must be a label value, not {_shown(v)}"))
    return out


def selects(selector: object, labels: Mapping[str, str]) -> bool:
    """Whether ``selector`` (raw, camelCase) selects an object with ``labels``; None selects all."""
    if selector is None:
        return True
    if problems(selector) or not isinstance(selector, Mapping):
        return False
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr["key"], expr["operator"], expr.get("values") or []
        present = key in labels
        if op == "In" and not (present and labels[key] in values):
            return False
        if op == "NotIn" and present and labels[key] in values:
            return False
        if op == "Exists" and not present:
            return False
        if op == "DoesNotExist" and present:
            return False
    return True
