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


class Cache:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._objects: dict[Key, Obj] = {}

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
                return ("DELETED", obj, old)
            self._objects[key] = obj
        return ("ADDED" if old is None else "MODIFIED", obj, old)

    def replace(self, items: builtins.list[Obj]) -> builtins.list[Change]:
        """Make the cache exactly ``items``; the changes in the order: additions and modifications
        (in list order), then deletions."""
        fresh = {key_of(o): o for o in items}
        with self._lock:
            old = self._objects
            self._objects = fresh
        changes: builtins.list[Change] = []
        for key, obj in fresh.items():
            before = old.get(key)
            if before is None:
                changes.append(("ADDED", obj, None))
            elif _rv(before) != _rv(obj):
                changes.append(("MODIFIED", obj, before))
        changes.extend(("DELETED", before, before) for key, before in old.items() if key not in fresh)
        return changes
