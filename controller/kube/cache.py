"""The informer's store: the latest copy of each object, keyed by (namespace, name), thread-safe.

It turns a watch event or a fresh list into the change a handler sees: (event type, new, old). A list
after a gap (a 410 Gone, a restart) is diffed against what was cached, so objects deleted meanwhile
still produce DELETED. No I/O.
"""

from __future__ import annotations

import builtins
import threading
from typing import Any

Obj = dict[str, Any]
Change = tuple[str, Obj, Obj | None]  # (ADDED | MODIFIED | DELETED, new, old)
Key = tuple[str, str]


def key_of(obj: Obj) -> Key:
    meta = obj.get("metadata") or {}
    return (meta.get("namespace") or "", meta.get("name") or "")


def _rv(obj: Obj | None) -> str | None:
    return None if obj is None else (obj.get("metadata") or {}).get("resourceVersion")


def _label(obj: Obj, label: str) -> str | None:
    value = ((obj.get("metadata") or {}).get("labels") or {}).get(label)
    return value if isinstance(value, str) else None


class Cache:
    """``index_label``: keep an index by (namespace, value of that label), so ``labelled`` costs the
    objects it returns rather than the whole cache (the controller indexes by the order label)."""

    def __init__(self, index_label: str | None = None) -> None:
        self._lock = threading.Lock()
        self._objects: dict[Key, Obj] = {}
        self._label = index_label
        self._index: dict[Key, set[Key]] = {}

    def _unindex(self, key: Key, obj: Obj | None) -> None:
        if self._label is None or obj is None:
            return
        value = _label(obj, self._label)
        if value is not None:
            keys = self._index.get((key[0], value))
            if keys is not None:
                keys.discard(key)
                if not keys:
                    del self._index[(key[0], value)]

    def _reindex(self, key: Key, obj: Obj) -> None:
        if self._label is None:
            return
        value = _label(obj, self._label)
        if value is not None:
            self._index.setdefault((key[0], value), set()).add(key)

    def labelled(self, namespace: str, value: str) -> builtins.list[Obj]:
        """Objects in ``namespace`` whose ``index_label`` is ``value`` (needs ``index_label``)."""
        with self._lock:
            if self._label is None:
                raise ValueError("this cache keeps no label index")
            return [self._objects[k] for k in sorted(self._index.get((namespace, value), ()))]

    def get(self, namespace: str | None, name: str) -> Obj | None:
        with self._lock:
            return self._objects.get((namespace or "", name))

    def list(self, namespace: str | None = None) -> builtins.list[Obj]:
        with self._lock:
            if namespace is None:
                return list(self._objects.values())
            return [o for (ns, _), o in self._objects.items() if ns == namespace]

    def __len__(self) -> int:
        with self._lock:
            return len(self._objects)

    def apply(self, event_type: str, obj: Obj) -> Change | None:
        """Record one watch event; ``None`` when it changes nothing (a DELETED of an unknown object)."""
        key = key_of(obj)
        with self._lock:
            old = self._objects.get(key)
            if event_type == "DELETED":
                if old is None:
                    return None
                del self._objects[key]
                self._unindex(key, old)
                return ("DELETED", obj, old)
            self._objects[key] = obj
            self._unindex(key, old)
            self._reindex(key, obj)
        return ("ADDED" if old is None else "MODIFIED", obj, old)

    def replace(self, items: builtins.list[Obj]) -> builtins.list[Change]:
        """Make the cache exactly ``items``; the changes in the order: additions and modifications
        (in list order), then deletions."""
        fresh = {key_of(o): o for o in items}
        with self._lock:
            old = self._objects
            self._objects = fresh
            self._index = {}
            for key, obj in fresh.items():
                self._reindex(key, obj)
        changes: builtins.list[Change] = []
        for key, obj in fresh.items():
            before = old.get(key)
            if before is None:
                changes.append(("ADDED", obj, None))
            elif _rv(before) != _rv(obj):
                changes.append(("MODIFIED", obj, before))
        changes.extend(("DELETED", before, before) for key, before in old.items() if key not in fresh)
        return changes
