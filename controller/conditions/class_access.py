"""Which namespaces may use a class: its ``spec.namespaceSelector`` against the namespace's labels. Pure.

A class that does not select the order's namespace is, for that order, a class that does not exist:
``observe`` hands ``decide`` no class, and the order reads ``ClassResolved=False/ClassNotFound``
with the very message of a missing class, so a tenant cannot tell which classes exist. Unset
selects every namespace. A namespace the cache does not hold (yet) has unknown labels and is not
selected by a selector: a class is never opened by missing knowledge; the namespace's event
reconciles its orders again (``wiring``, ``Fanout.NAMESPACE``). A selector with a syntax error (the
webhook refuses one; a cluster without the webhook may store it) selects nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from shared import label_selector

Obj = Mapping[str, Any]


def namespace_selector(klass: Obj) -> object:
    """The raw ``spec.namespaceSelector`` of a class object, None when unset."""
    spec = klass.get("spec")
    return spec.get("namespaceSelector") if isinstance(spec, Mapping) else None


def admits(klass: Obj, namespace: Obj | None) -> bool:
    """Whether orders in ``namespace`` (its cached object, None when unknown) may use ``klass``."""
    selector = namespace_selector(klass)
    if selector is None:
        return True
    if namespace is None:
        return False
    labels = (namespace.get("metadata") or {}).get("labels") or {}
    return label_selector.selects(selector, labels)


def selector_problem(klass: Obj) -> str | None:
    """The first syntax problem of the class's namespace selector, for the class's Ready condition."""
    selector = namespace_selector(klass)
    found = label_selector.problems(selector) if selector is not None else []
    if not found:
        return None
    path, message = found[0]
    where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path)
    return f"`spec.namespaceSelector{where}` {message}"
