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
        self._words: dict[str, frozenset[str] | None] = {}

    def matches(self, selector: Selector, view: DeviceView) -> bool:
        words = self._words.get(selector.expression, frozenset())
        if words == frozenset() and selector.expression not in self._words:
            words = None if _ITERATING.search(selector.expression) else _mentioned(selector.expression)
            self._words[selector.expression] = words
        if words is None:
            return selector.matches(view)
        key = (selector.expression, _projection(view, words))
        hit = self._results.get(key)
        if hit is None:
            hit = selector.matches(_project(view, words))
            self._results[key] = hit
        return hit


def _mentioned(expression: str) -> frozenset[str]:
    found: set[str] = set()
    for word in _WORDS.findall(expression):
        found.update(part for part in re.split(r"[.\"']", word) if part)
    for literal in re.findall(r"\"([^\"]*)\"|'([^']*)'", expression):
        found.update(x for x in literal if x)
    return frozenset(found)


def _projection(view: DeviceView, words: frozenset[str]) -> object:
    return (
        view.driver,
        tuple(
            (d, tuple((k, vals[k]) for k in sorted(words & vals.keys())))
            for d, vals in view.attributes.items()
        ),
        tuple(
            (d, tuple((k, vals[k]) for k in sorted(words & vals.keys()))) for d, vals in view.capacity.items()
        ),
    )


def _project(view: DeviceView, words: frozenset[str]) -> DeviceView:
    return DeviceView(
        driver=view.driver,
        attributes={d: {k: v for k, v in vals.items() if k in words} for d, vals in view.attributes.items()},
        capacity={d: {k: v for k, v in vals.items() if k in words} for d, vals in view.capacity.items()},
    )
