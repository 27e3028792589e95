"""Semantic versions as the Kubernetes semver CEL library compares them (semver 2.0 precedence). Pure."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from shared.cel.errors import CelError

_SEMVER = re.compile(
    r"^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)"
    r"(?:-((?:0|[1-9][0-9]*|[0-9]*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9][0-9]*|[0-9]*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
    r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$"
)


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

    def precedence(self) -> tuple[int, int, int, int, tuple[tuple[int, int, str], ...]]:
        """A plain tuple equal for equal versions (and ordered as they are): a cheap key."""
        return self._precedence

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Semver):
            return NotImplemented
        return self.precedence() == other.precedence()

    def __hash__(self) -> int:
        return hash(self.precedence())

    def __lt__(self, other: Semver) -> bool:
        return self.precedence() < other.precedence()

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
