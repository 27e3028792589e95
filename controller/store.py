"""Read access to the informer caches, by ``Cache``. An unwatched cache is an error, never "absent"."""

from __future__ import annotations

import builtins
from collections.abc import Mapping
from typing import Any, Protocol

from controller.kinds import Cache

Obj = dict[str, Any]


class Reader(Protocol):
    """One cache: what ``controller.kube.informer.Informer`` offers."""

    def get(self, namespace: str | None, name: str) -> Obj | None: ...
    def list(self, namespace: str | None = None) -> list[Obj]: ...
    def labelled(self, namespace: str, value: str) -> builtins.list[Obj]: ...


class UnwatchedCacheError(KeyError):
    """A read of a cache this process does not watch: a programming error, not a missing object."""


class Store:
    """The caches of this process. ``get``/``list`` raise ``UnwatchedCacheError`` for an unknown cache."""

    def __init__(self, readers: Mapping[Cache, Reader]) -> None:
        self._readers = dict(readers)

    def watches(self, cache: Cache) -> bool:
        return cache in self._readers

    def _reader(self, cache: Cache) -> Reader:
        try:
            return self._readers[cache]
        except KeyError:
            raise UnwatchedCacheError(f"cache {cache!s} is not watched by this process") from None

    def get(self, cache: Cache, namespace: str | None, name: str) -> Obj | None:
        return self._reader(cache).get(namespace, name)

    def list(self, cache: Cache, namespace: str | None = None) -> list[Obj]:
        return self._reader(cache).list(namespace)

    def labelled(self, cache: Cache, namespace: str | None, order: str) -> builtins.list[Obj]:
        """Objects of ``cache`` in ``namespace`` that carry the order label ``order`` (an index read:
        every cache selected by the order label is indexed by it)."""
        return self._reader(cache).labelled(namespace or "", order)
