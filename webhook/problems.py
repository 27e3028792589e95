"""Collecting validation problems over a raw object, with field paths and plain messages.

The validators walk the raw JSON of the object (not a model) so that every problem is found, with
its path, in one pass. A problem reads like the Kubernetes API conventions ask:

    `spec.model.ref.kind`: must not be set when `spec.model.src` is `HuggingFace`
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from shared.api.order import DNS_SUBDOMAIN_PATTERN

PathPart = str | int
Path = tuple[PathPart, ...]

DNS_SUBDOMAIN = re.compile(DNS_SUBDOMAIN_PATTERN)


def render(path: Path) -> str:
    """``("spec", "recipes", 0)`` -> ``spec.recipes[0]``."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out


def choices(values: Sequence[str]) -> str:
    """``["A", "B", "C"]`` -> ```A`, `B` or `C```."""
    quoted = [f"`{v}`" for v in values]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " or " + quoted[-1]


def shown(value: object) -> str:
    """A short rendering of a value for a message."""
    text = repr(value) if not isinstance(value, str) else f'"{value}"'
    return text if len(text) <= 80 else text[:77] + "..."


class Problems:
    """The problems found so far, in the order found. Local to one validation: never shared."""

    def __init__(self) -> None:
        self.items: list[str] = []

    def add(self, path: Path, message: str) -> None:
        self.items.append(f"`{render(path)}`: {message}")

    def obj(self, parent: Mapping[str, Any], path: Path, *, required: bool) -> Mapping[str, Any] | None:
        """The object at ``path`` (its last part is the key in ``parent``), or None when absent or wrong."""
        value = parent.get(str(path[-1]))
        if value is None:
            if required:
                self.add(path, "is required")
            return None
        if not isinstance(value, Mapping):
            self.add(path, f"must be an object, not {shown(value)}")
            return None
        return value

    def string(
        self,
        parent: Mapping[str, Any],
        path: Path,
        *,
        required: bool,
        pattern: re.Pattern[str] | None = None,
        expected: str = "",
        max_length: int | None = None,
    ) -> str | None:
        """A string, checked against ``pattern`` (described by ``expected``) and ``max_length``."""
        value = parent.get(str(path[-1]))
        return self.string_value(
            value, path, required=required, pattern=pattern, expected=expected, max_length=max_length
        )

    def string_value(
        self,
        value: object,
        path: Path,
        *,
        required: bool,
        pattern: re.Pattern[str] | None = None,
        expected: str = "",
        max_length: int | None = None,
    ) -> str | None:
        if value is None:
            if required:
                self.add(path, "is required")
            return None
        if not isinstance(value, str):
            self.add(path, f"must be a string, not {shown(value)}")
            return None
        if value == "":
            self.add(path, "must not be empty")
            return None
        if max_length is not None and len(value) > max_length:
            self.add(path, f"must be at most {max_length} characters long, not {len(value)}")
            return None
        if pattern is not None and not pattern.match(value):
            self.add(path, f"must be {expected}, not {shown(value)}")
            return None
        return value

    def dns_name(self, parent: Mapping[str, Any], path: Path, *, required: bool, what: str) -> str | None:
        """A DNS subdomain name (lower case alphanumerics, `-` and `.`, at most 253 characters)."""
        return self.dns_name_value(parent.get(str(path[-1])), path, required=required, what=what)

    def dns_name_value(self, value: object, path: Path, *, required: bool, what: str) -> str | None:
        return self.string_value(
            value,
            path,
            required=required,
            pattern=DNS_SUBDOMAIN,
            expected=f"{what}: a DNS subdomain name (lower case letters, digits, `-` and `.`)",
            max_length=253,
        )

    def one_of(
        self, parent: Mapping[str, Any], path: Path, allowed: Sequence[str], *, required: bool
    ) -> str | None:
        value = parent.get(str(path[-1]))
        return self.one_of_value(value, path, allowed, required=required)

    def one_of_value(
        self, value: object, path: Path, allowed: Sequence[str], *, required: bool
    ) -> str | None:
        if value is None:
            if required:
                self.add(path, f"is required: one of {choices(allowed)}")
            return None
        if value not in allowed:
            self.add(path, f"must be one of {choices(allowed)}, not {shown(value)}")
            return None
        assert isinstance(value, str)
        return value

    def items_of(
        self, parent: Mapping[str, Any], path: Path, *, required: bool, non_empty: bool = False
    ) -> list[Any] | None:
        """The list at ``path``, or None when absent or not a list."""
        value = parent.get(str(path[-1]))
        if value is None:
            if required:
                self.add(path, "is required" + (": a list with at least one item" if non_empty else ""))
            return None
        if not isinstance(value, list):
            self.add(path, f"must be a list, not {shown(value)}")
            return None
        if non_empty and not value:
            self.add(path, "must list at least one item")
        return value

    def enum_list(
        self,
        parent: Mapping[str, Any],
        path: Path,
        allowed: Sequence[str],
        *,
        required: bool,
        non_empty: bool,
    ) -> list[str] | None:
        """A list of values from ``allowed``, each at most once."""
        items = self.items_of(parent, path, required=required, non_empty=non_empty)
        if items is None:
            return None
        good = [v for i, v in enumerate(items) if self.one_of_value(v, (*path, i), allowed, required=True)]
        self.unique(items, path)
        return good

    def unique(self, items: Sequence[Any], path: Path) -> None:
        seen: list[Any] = []
        for i, v in enumerate(items):
            if isinstance(v, str | int | float | bool) and v in seen:
                self.add((*path, i), f"must not repeat {shown(v)}")
            seen.append(v)

    def integer(
        self,
        parent: Mapping[str, Any],
        path: Path,
        *,
        required: bool,
        minimum: int | None = None,
        maximum: int | None = None,
    ) -> int | None:
        value = parent.get(str(path[-1]))
        if value is None:
            if required:
                self.add(path, "is required")
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            self.add(path, f"must be an integer, not {shown(value)}")
            return None
        if minimum is not None and value < minimum:
            self.add(path, f"must be at least {minimum}, not {value}")
            return None
        if maximum is not None and value > maximum:
            self.add(path, f"must be at most {maximum}, not {value}")
            return None
        return value

    def forbidden(self, parent: Mapping[str, Any], path: Path, *, when: str) -> None:
        """The field at ``path`` must be absent; ``when`` says under which condition."""
        if parent.get(str(path[-1])) is not None:
            self.add(path, f"must not be set when {when}")
