"""The facts cache's second level: resolved facts kept across restarts and shared by replicas.

A commit never changes, so the facts of (repo, commit sha) are true forever: ``HubClient`` asks its
in-process cache first, then its ``FactsStore``, and only then the Hub; what it fetches from the Hub
it puts into both. ``InMemoryFactsStore`` is the in-process implementation (tests, and the default
of nothing persistent); the controller backs the interface with a ConfigMap, using ``store_key`` for
the data key and ``encode_facts``/``decode_facts`` for the value.

Implementations should not raise: ``HubClient`` logs an exception from ``get`` as a miss and from
``put`` as a lost write, and carries on.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Protocol

from pydantic import ValidationError

from controller.facts import ModelFacts


class FactsStore(Protocol):
    """Facts by (Hugging Face repo id, full commit sha)."""

    def get(self, repo_id: str, sha: str) -> ModelFacts | None:
        """The facts stored for this commit, or None."""
        ...

    def put(self, repo_id: str, sha: str, facts: ModelFacts) -> None:
        """Keep ``facts`` for this commit (an existing entry may be replaced: it holds the same facts)."""
        ...


class InMemoryFactsStore:
    """A ``FactsStore`` in a dict, bounded (least recently used out first). Thread-safe."""

    def __init__(self, *, max_entries: int = 1024) -> None:
        self._max = max_entries
        self._lock = threading.Lock()
        self._facts: OrderedDict[tuple[str, str], ModelFacts] = OrderedDict()
        self.gets = 0
        self.puts = 0

    def get(self, repo_id: str, sha: str) -> ModelFacts | None:
        with self._lock:
            self.gets += 1
            facts = self._facts.get((repo_id, sha))
            if facts is not None:
                self._facts.move_to_end((repo_id, sha))
            return facts

    def put(self, repo_id: str, sha: str, facts: ModelFacts) -> None:
        with self._lock:
            self.puts += 1
            self._facts[(repo_id, sha)] = facts
            self._facts.move_to_end((repo_id, sha))
            while len(self._facts) > self._max:
                self._facts.popitem(last=False)

    def __len__(self) -> int:
        with self._lock:
            return len(self._facts)


def store_key(repo_id: str, sha: str) -> str:
    """A ConfigMap data key (``[-._a-zA-Z0-9]+``, at most 253 characters) for this commit:
    ``owner--name.sha``. Injective, because a Hub repo id has one ``/`` and no ``--``."""
    return f"{repo_id.replace('/', '--')}.{sha}"


def encode_facts(facts: ModelFacts) -> str:
    """The JSON form of ``facts`` that ``decode_facts`` reads back."""
    return facts.model_dump_json()


def decode_facts(text: str) -> ModelFacts | None:
    """The facts in ``text``, or None when it is not what ``encode_facts`` wrote for the current
    ``ModelFacts`` (an older or corrupt entry is a miss, and the Hub is asked again)."""
    try:
        return ModelFacts.model_validate_json(text)
    except ValidationError:
        return None
