"""The Hub client's caches: a bounded map whose entries expire, per-key single flight, and the
interface of the second level (``FactsStore``). Pure.

``TtlLru`` forgets the least recently used entry past ``max_entries`` and treats an entry older than
``ttl`` seconds (None: never) as absent. ``SingleFlight.hold(key)`` lets one caller at a time work on
``key``: concurrent callers of one key wait for the first and then find its result in the cache, so N
orders of one model cost the Hub calls of one. Its locks are dropped when nobody holds or waits for
them, so it does not grow with the keys ever seen.

A commit never changes, so the facts of (repo, commit sha) are true forever: ``HubClient`` asks its
process cache first, then its ``FactsStore`` (which outlives the process and is shared by replicas:
``controller.modelhub.store`` keeps facts in ConfigMaps), and only then the Hub; what it fetches from the
Hub it puts into both. ``InMemoryFactsStore`` is the in-process implementation, for tests and the
bench.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Generic, Protocol, TypeVar

from controller.model_facts.facts import ModelFacts

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class TtlLru(Generic[K, V]):
    """A thread-safe map with LRU eviction and an optional time to live; ``clock`` returns seconds.

    Bounded by ``max_entries`` and, with ``weigh`` (the bytes one value holds), by ``max_bytes``: the
    least recently used entries go until both bounds hold; a value heavier than ``max_bytes`` is not
    kept at all.
    """

    def __init__(
        self,
        *,
        max_entries: int,
        ttl: float | None,
        clock: Callable[[], float],
        max_bytes: int | None = None,
        weigh: Callable[[V], int] | None = None,
    ) -> None:
        if max_entries < 1:
            raise ValueError("max_entries must be at least 1")
        self._max = max_entries
        self._max_bytes = max_bytes
        self._weigh = weigh
        self._bytes = 0
        self._ttl = ttl
        self._clock = clock
        self._lock = threading.Lock()
        self._entries: OrderedDict[K, tuple[float, V, int]] = OrderedDict()

    @property
    def bytes(self) -> int:
        """The weight of the values held (0 without ``weigh``)."""
        with self._lock:
            return self._bytes

    def get(self, key: K) -> V | None:
        """The live value of ``key`` (now the most recently used), or None."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            if entry[0] <= self._clock():
                self._drop(key)
                return None
            self._entries.move_to_end(key)
            return entry[1]

    def put(self, key: K, value: V) -> None:
        weight = self._weigh(value) if self._weigh is not None else 0
        with self._lock:
            self._drop(key)
            if self._max_bytes is not None and weight > self._max_bytes:
                return
            expires = float("inf") if self._ttl is None else self._clock() + self._ttl
            self._entries[key] = (expires, value, weight)
            self._bytes += weight
            while len(self._entries) > self._max or (
                self._max_bytes is not None and self._bytes > self._max_bytes
            ):
                self._drop(next(iter(self._entries)))

    def pop(self, key: K) -> None:
        with self._lock:
            self._drop(key)

    def _drop(self, key: K) -> None:
        entry = self._entries.pop(key, None)
        if entry is not None:
            self._bytes -= entry[2]

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)


@dataclass
class _Flight:
    lock: threading.Lock = field(default_factory=threading.Lock)
    users: int = 0


class SingleFlight(Generic[K]):
    """One caller at a time per key. Holding two keys is safe when every caller takes them in the
    same order (the Hub client takes a revision key, then a commit key, never the reverse)."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._flights: dict[K, _Flight] = {}

    @contextmanager
    def hold(self, key: K) -> Iterator[None]:
        with self._guard:
            flight = self._flights.setdefault(key, _Flight())
            flight.users += 1
        try:
            with flight.lock:
                yield
        finally:
            with self._guard:
                flight.users -= 1
                if flight.users == 0:
                    del self._flights[key]

    def __len__(self) -> int:
        """Keys held or waited for right now."""
        with self._guard:
            return len(self._flights)


class FactsStore(Protocol):
    """Facts by (Hugging Face repo id, full commit sha). The parameters are positional, so an
    implementation may name them as it likes.

    Implementations should not raise: ``HubClient`` logs an exception from ``get`` as a miss and
    from ``put`` as a lost write, and carries on.
    """

    def get(self, repo_id: str, sha: str, /) -> ModelFacts | None:
        """The facts stored for this commit, or None."""
        ...

    def put(self, repo_id: str, sha: str, facts: ModelFacts, /) -> None:
        """Keep ``facts`` for this commit (an entry may be replaced: it holds the same facts)."""
        ...


class InMemoryFactsStore:
    """A ``FactsStore`` in a dict, bounded (least recently used out first), counting its calls."""

    def __init__(self, *, max_entries: int = 1024) -> None:
        self._facts: TtlLru[tuple[str, str], ModelFacts] = TtlLru(
            max_entries=max_entries, ttl=None, clock=lambda: 0.0
        )
        self._count = threading.Lock()
        self.gets = 0
        self.puts = 0

    def get(self, repo_id: str, sha: str, /) -> ModelFacts | None:
        with self._count:
            self.gets += 1
        return self._facts.get((repo_id, sha))

    def put(self, repo_id: str, sha: str, facts: ModelFacts, /) -> None:
        with self._count:
            self.puts += 1
        self._facts.put((repo_id, sha), facts)

    def __len__(self) -> int:
        return len(self._facts)
