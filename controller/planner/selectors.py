"""Memoised selector evaluation over many devices. Pure; one cache per planning call or build.

celpy evaluates a selector in about half a millisecond, and a fleet has thousands of devices that
differ only in names an expression never mentions (``uuid``, ``index``...). The cache keys each
result on the expression and the device's attributes and capacity restricted to the names the
expression mentions. Expressions it cannot see through (macros or ``size()`` over maps, computed
names) are evaluated on every device.
"""

from __future__ import annotations

import re

from shared.cel import DeviceView, Selector

# Expressions the memo cannot see through: macros and size() over maps, computed names
# (``+``, an index that is not a string literal).
_ITERATING = re.compile(r"\b(size|all|exists|exists_one|map|filter)\s*\(|\+|\[\s*[^\"'\s]")
_WORDS = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-/]*")


class SelectorCache:
    """Selector results per (expression, the device restricted to the names it mentions)."""

    def __init__(self) -> None:
        self._results: dict[tuple[str, object], bool] = {}
        self._words: dict[str, tuple[str, ...] | None] = {}

    def matches(self, selector: Selector, view: DeviceView) -> bool:
        expression = selector.expression
        if expression in self._words:
            names = self._words[expression]
        else:
            names = None if _ITERATING.search(expression) else tuple(sorted(_mentioned(expression)))
            self._words[expression] = names
        if names is None:
            return selector.matches(view)
        key = (expression, _projection(view, names))
        hit = self._results.get(key)
        if hit is None:
            hit = selector.matches(_project(view, frozenset(names)))
            self._results[key] = hit
        return hit


def _mentioned(expression: str) -> frozenset[str]:
    found: set[str] = set()
    for word in _WORDS.findall(expression):
        found.update(part for part in re.split(r"[.\"']", word) if part)
    for literal in re.findall(r"\"([^\"]*)\"|'([^']*)'", expression):
        found.update(x for x in literal if x)
    return frozenset(found)


_ABSENT = object()  # a name the device does not have, in a projection


def _projection(view: DeviceView, names: tuple[str, ...]) -> object:
    """What the expression can see of the device: one value (or absence) per mentioned name."""
    return (
        view.driver,
        tuple((d, tuple([vals.get(k, _ABSENT) for k in names])) for d, vals in view.attributes.items()),
        tuple((d, tuple([vals.get(k, _ABSENT) for k in names])) for d, vals in view.capacity.items()),
    )


def _project(view: DeviceView, words: frozenset[str]) -> DeviceView:
    return DeviceView(
        driver=view.driver,
        attributes={d: {k: v for k, v in vals.items() if k in words} for d, vals in view.attributes.items()},
        capacity={d: {k: v for k, v in vals.items() if k in words} for d, vals in view.capacity.items()},
    )
