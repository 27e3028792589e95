"""Mutating an order: remove every field an order may not carry, and say so in admission warnings.

The patch is computed against the RAW object of the request with ``jsonpatch``, never against a
re-serialised model, so nothing the models do not know is lost or rewritten silently.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jsonpatch

from webhook.order_fields import order_spec_tree, prune_spec
from webhook.problems import Path, render

MAX_WARNINGS = 10
_MAX_KEY = 64


def pruning(obj: Mapping[str, Any]) -> tuple[list[dict[str, Any]], list[str]]:
    """The JSONPatch that removes what an order may not carry, and one warning per removed path."""
    spec = obj.get("spec")
    if not isinstance(spec, Mapping):
        return [], []
    removed = prune_spec(spec, order_spec_tree())
    if not removed:
        return [], []
    pruned = _without(spec, [path[1:] for path in removed])
    # Diff the raw spec only: the rest of the object is never touched, and is never walked.
    patch: list[dict[str, Any]] = [
        {**op, "path": "/spec" + op["path"]} for op in jsonpatch.make_patch(dict(spec), pruned).patch
    ]
    return patch, warnings_for(removed)


def _without(spec: Mapping[str, Any], paths: list[Path]) -> dict[str, Any]:
    """A copy of ``spec`` without ``paths``; only the containers along the paths are copied."""
    out = dict(spec)
    for path in paths:
        parent: Any = out
        for part in path[:-1]:
            child = parent[part]
            parent[part] = dict(child) if isinstance(child, Mapping) else list(child)
            parent = parent[part]
        del parent[path[-1]]
    return out


def warnings_for(removed: list[Path]) -> list[str]:
    """``removed `spec.runtime`: ...`` for each path, at most MAX_WARNINGS and a count of the rest."""
    out = [
        f"removed `{_printable(path)}`: an order carries only its class and its model; "
        "the platform decides the rest"
        for path in removed[:MAX_WARNINGS]
    ]
    if len(removed) > MAX_WARNINGS:
        out.append(f"removed {len(removed) - MAX_WARNINGS} more fields an order may not carry")
    return out


def _printable(path: Path) -> str:
    parts: list[str | int] = []
    for part in path:
        if isinstance(part, str):
            part = "".join(c if c.isprintable() and c != "`" else "?" for c in part)
            part = part if len(part) <= _MAX_KEY else part[: _MAX_KEY - 3] + "..."
        parts.append(part)
    return render(tuple(parts))
