"""Which fields an order may carry, derived from the pydantic models, and pruning of the rest.

The allowed tree is read from ``shared.api.order.InferenceServiceSpec`` (the wire names, camelCase),
so that adding a field to the API adds it here. ``prune_spec`` walks the RAW spec of a request and
returns the paths of everything outside the tree; the mutating handler turns them into a JSONPatch.
"""

from __future__ import annotations

import functools
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from shared.api.order import InferenceServiceSpec
from webhook.problems import Path


@dataclass(frozen=True)
class FieldTree:
    """The wire names allowed at one object level; a child tree for each field that is an object."""

    children: Mapping[str, FieldTree | None] = field(default_factory=dict)
    is_list: bool = False


def tree_of(model: type[BaseModel]) -> FieldTree:
    """The allowed tree of ``model``: every field by its wire name, recursing into nested models."""
    children: dict[str, FieldTree | None] = {}
    for name, info in model.model_fields.items():
        wire = info.serialization_alias or info.alias or name
        children[wire] = _subtree(info.annotation)
    return FieldTree(children=children)


def _subtree(annotation: Any) -> FieldTree | None:
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        trees = [t for t in (_subtree(a) for a in typing.get_args(annotation)) if t is not None]
        return trees[0] if trees else None
    if origin is list:
        (item,) = typing.get_args(annotation)
        sub = _subtree(item)
        return None if sub is None else FieldTree(children=sub.children, is_list=True)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return tree_of(annotation)
    return None


@functools.cache
def order_spec_tree() -> FieldTree:
    """The allowed tree of an order's ``spec`` (computed once; it is a constant of the API)."""
    return tree_of(InferenceServiceSpec)


def prune_spec(spec: Mapping[str, Any], tree: FieldTree, path: Path = ("spec",)) -> list[Path]:
    """Paths under ``spec`` that the tree does not allow, in document order. ``spec`` is not changed.

    Values of the wrong type (a string where an object belongs) are left for the validator to refuse.
    """
    removed: list[Path] = []
    for key, value in spec.items():
        if key not in tree.children:
            removed.append((*path, key))
            continue
        sub = tree.children[key]
        if sub is None:
            continue
        if sub.is_list:
            if isinstance(value, list):
                for i, item in enumerate(value):
                    if isinstance(item, Mapping):
                        removed += prune_spec(item, FieldTree(children=sub.children), (*path, key, i))
        elif isinstance(value, Mapping):
            removed += prune_spec(value, sub, (*path, key))
    return removed
