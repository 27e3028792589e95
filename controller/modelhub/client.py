"""Model facts from a Hugging Face Hub (or a mirror of it) through huggingface_hub. I/O edge.

The reconciler asks ``HubClient`` for the facts of an order's model. Failures come back as four
exceptions the reconciler turns into reasons: ``ModelNotFound``, ``ModelAccessDenied``,
``ModelNotReady`` (a repository beyond the controller's bounds, ``controller.modelhub.limits``) and
``ModelSourceUnavailable`` (retried with backoff; ``retry_after`` says after how long).

Two ways in:

- ``fetch_facts(repo_id, revision, token)`` resolves ``revision`` (default ``main``) to its commit
  and returns the facts of that commit: for an order that was never resolved, or whose model or
  class changed;
- ``fetch_facts_pinned(repo_id, sha, token)`` returns the facts of a commit the order was already
  resolved to (``status.model.revision``): from the in-process cache or the ``FactsStore`` with
  **zero Hub calls**, and only when both miss from the Hub, as ``fetch_facts`` would. It does not
  prove again that ``token`` may read a gated repository: use it only for an order whose resolution
  with its token succeeded.

Caches (``controller.modelhub.cache``), for N orders of one model:

- facts per (repo, commit sha), for the life of the process (a commit never changes), least recently
  used out past ``max_cached_models``; behind it the optional ``FactsStore`` (``controller.modelhub.cache``),
  which outlives the process and is shared by replicas;
- revision -> commit per (repo, revision, token digest), for ``revision_ttl`` seconds (default 60):
  one ``GET /api/models/{repo}[/revision/{rev}]?blobs=True`` per window;
- refusals (ModelNotFound, ModelAccessDenied) per (repo, revision, token digest) for ``refusal_ttl``
  seconds (default 10), so a missing or forbidden model costs one attempt per 10 s and a new token
  (a new digest) is tried at once;
- refusals for size or sanity (ModelNotReady) per (repo, revision, token digest) for ``refused_ttl``
  seconds (default 900), and per (repo, commit) four times as long: a hostile repository is read
  once, and then costs one model-info request per ``refused_ttl`` per revision;
- unavailability (ModelSourceUnavailable: 429, 5xx, no answer) per (repo, revision, token digest),
  held for a jittered exponential backoff (10 s, 20 s... up to 320 s for slow failures, a fast one only the first step; never less than a
  ``Retry-After``, ``controller.modelhub.retry``) during which the Hub is not asked for that key and the
  error carries the remaining wait (``retry_after``), after which the order is requeued.

The facts cache is bounded in bytes (``max_cached_bytes``, the facts' JSON size) as well as entries.
Concurrent callers of one key wait for the first one (single flight), so they cost one fetch.

What a commit's facts cost when neither cache has them: one ``GET config.json`` when the repo has
one, one ``GET`` of its sentence-transformers config (``sentence_bert_config.json``...) when it has
one, plus one ``Range`` GET per safetensors file (``model.safetensors``, or the index and then each
shard). A GGUF repo costs one ``Range`` GET of the served file's first 256 kB. So the first order of
a 4-shard model costs 1 + 6 = 7 requests, later orders within the TTL none, and after it 1 per
window per (repo, revision, token); a gated repo's facts found in a cache cost one ``HEAD`` more per
token, to prove the token's access (its model info is public, its files are not).

No call ever waits in the worker: a 429 fails at once, and closes the gate of its token (anonymous
calls share one) until its ``Retry-After`` has passed (``controller.modelhub.requests``).

The token is sent as ``Authorization: Bearer``, is never logged, never put in a message, and is
cached only as a SHA-256 digest. ``token=None`` means anonymous: the process's own Hugging Face
login (HF_TOKEN, ~/.cache/huggingface) is never used on a user's behalf.
"""

from __future__ import annotations

import hashlib
import logging
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from controller.model_facts.facts import ModelFacts
from controller.modelhub.cache import FactsStore, SingleFlight, TtlLru
from controller.modelhub.exceptions import (
    ModelAccessDenied,
    ModelNotFound,
    ModelNotReady,
    ModelSourceUnavailable,
)
from controller.modelhub.limits import HubLimits
from controller.modelhub.retry import RetryPolicy, backoff_delay

if TYPE_CHECKING:
    from huggingface_hub.hf_api import ModelInfo

    from controller.modelhub.requests import HubRequests

__all__ = [
    "DEFAULT_ENDPOINT",
    "HubClient",
    "HubLimits",
    "ModelAccessDenied",
    "ModelNotFound",
    "ModelNotReady",
    "ModelSourceUnavailable",
    "RetryPolicy",
]

log = logging.getLogger(__name__)

DEFAULT_ENDPOINT = "https://huggingface.co"

Refusal = ModelNotFound | ModelAccessDenied | ModelNotReady


@dataclass(frozen=True, slots=True)
class _Held:
    """An unavailability remembered for one key: the error, failures in a row, and until when."""

    error: ModelSourceUnavailable
    failures: int
    until: float


class HubClient:
    """Fetches and caches ``ModelFacts``; one per controller process, safe to share between workers.

    ``on_call(outcome)`` is called once per HTTP request made, with ``ok``, ``not_found``,
    ``denied``, ``refused``, ``rate_limited`` or ``unavailable``. ``store`` is the second-level facts
    cache (None: the process cache alone). ``retry`` is the backoff of an unavailable key, ``limits``
    the bounds of what is read. ``clock`` returns monotonic seconds for the TTLs and the backoff;
    ``rand`` draws the backoff's jitter.
    """

    def __init__(
        self,
        *,
        endpoint: str = DEFAULT_ENDPOINT,
        timeout: float = 10.0,
        revision_ttl: float = 60.0,
        refusal_ttl: float = 10.0,
        refused_ttl: float = 900.0,
        max_cached_models: int = 256,
        max_cached_bytes: int = 32 * 1024 * 1024,
        store: FactsStore | None = None,
        retry: RetryPolicy | None = None,
        limits: HubLimits | None = None,
        on_call: Callable[[str], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
        rand: Callable[[], float] = random.random,
    ) -> None:
        self.endpoint = (endpoint or DEFAULT_ENDPOINT).rstrip("/")
        endpoint_, limits_ = self.endpoint, limits or HubLimits()
        on_call_ = on_call or (lambda outcome: None)

        def make_requests() -> HubRequests:
            from controller.modelhub.requests import HubRequests  # deferred: it imports huggingface_hub

            return HubRequests(
                endpoint=endpoint_, timeout=timeout, limits=limits_, on_call=on_call_, clock=clock
            )

        self._make_requests = make_requests
        self._requests_made: HubRequests | None = None
        self._requests_lock = threading.Lock()
        self._store = store
        self._retry = retry or RetryPolicy()
        self._clock = clock
        self._rand = rand
        self._flight: SingleFlight[tuple[str, ...]] = SingleFlight()
        self._facts: TtlLru[tuple[str, str], ModelFacts] = TtlLru(
            max_entries=max_cached_models,
            ttl=None,
            clock=clock,
            max_bytes=max_cached_bytes,
            weigh=lambda facts: len(facts.model_dump_json()),
        )
        keys = 4 * max_cached_models
        self._revisions: TtlLru[tuple[str, str, str], str] = TtlLru(
            max_entries=keys, ttl=revision_ttl, clock=clock
        )
        self._refusals: TtlLru[tuple[str, str, str], Refusal] = TtlLru(
            max_entries=keys, ttl=refusal_ttl, clock=clock
        )
        self._refused: TtlLru[tuple[str, str, str], ModelNotReady] = TtlLru(
            max_entries=keys, ttl=refused_ttl, clock=clock
        )
        self._refused_commits: TtlLru[tuple[str, str], ModelNotReady] = TtlLru(
            max_entries=keys, ttl=4 * refused_ttl, clock=clock
        )
        self._held: TtlLru[tuple[str, str, str], _Held] = TtlLru(
            max_entries=keys, ttl=4 * self._retry.cap, clock=clock
        )

    @property
    def _requests(self) -> HubRequests:
        """The Hub's HTTP side, made on the first call that needs the Hub: importing huggingface_hub
        costs a second of start-up, and a restart whose facts are all cached never needs it."""
        with self._requests_lock:
            if self._requests_made is None:
                self._requests_made = self._make_requests()
            return self._requests_made

    # ---- the public calls

    def fetch_facts(self, *, repo_id: str, revision: str | None, token: str | None) -> ModelFacts:
        """The facts of ``repo_id`` at ``revision`` (default ``main``), as seen with ``token``."""
        rev = revision or "main"
        key = (repo_id, rev, _digest(token))
        with self._flight.hold(key):
            refusal = self._refusals.get(key) or self._refused.get(key)
            if refusal is not None:
                raise type(refusal)(str(refusal))
            self._raise_if_held(key)
            commit = self._revisions.get(key)
            facts = self.cached_facts(repo_id=repo_id, sha=commit) if commit is not None else None
            if facts is not None:
                return facts  # this token's access was proven when the revision was cached
            try:
                info = self._requests.model_info(repo_id, revision, token)
                commit = info.sha or rev
                facts = self._facts_of_commit(repo_id, commit, info, token)
            except (ModelNotFound, ModelAccessDenied) as e:
                self._refusals.put(key, e)
                self._revisions.pop(key)
                raise
            except ModelNotReady as e:
                self._refused.put(key, e)
                raise
            except ModelSourceUnavailable as e:
                self._hold(key, e)
                raise
            self._refusals.pop(key)
            self._held.pop(key)
            self._revisions.put(key, commit)
            return facts

    def _raise_if_held(self, key: tuple[str, str, str]) -> None:
        held = self._held.get(key)
        wait = held.until - self._clock() if held is not None else 0.0
        if held is not None and wait > 0:
            raise ModelSourceUnavailable(str(held.error), status=held.error.status, retry_after=wait)

    def _hold(self, key: tuple[str, str, str], e: ModelSourceUnavailable) -> None:
        """Remember an unavailability: the key is not sent to the Hub for the backoff's wait."""
        before = self._held.get(key)
        failures = before.failures + 1 if before is not None and e.slow else 0
        delay = backoff_delay(failures, e.retry_after, self._retry, self._rand())
        self._held.put(key, _Held(e, failures, self._clock() + delay))
        e.retry_after = delay

    def fetch_facts_pinned(self, *, repo_id: str, sha: str, token: str | None) -> ModelFacts:
        """The facts of commit ``sha``: no Hub call when a cache has them (see the module doc)."""
        facts = self.cached_facts(repo_id=repo_id, sha=sha)
        if facts is not None:
            return facts
        return self.fetch_facts(repo_id=repo_id, revision=sha, token=token)

    def cached_facts(self, *, repo_id: str, sha: str) -> ModelFacts | None:
        """The facts of commit ``sha`` from the process cache or the store, never from the Hub."""
        with self._flight.hold((repo_id, sha)):
            return self._lookup(repo_id, sha)

    # ---- the facts of one commit

    def _facts_of_commit(self, repo_id: str, commit: str, info: ModelInfo, token: str | None) -> ModelFacts:
        """Taken under the revision key's flight; the commit key is always taken second."""
        with self._flight.hold((repo_id, commit)):
            facts = self._lookup(repo_id, commit)
            refused = self._refused_commits.get((repo_id, commit)) if facts is None else None
            if refused is not None:
                raise ModelNotReady(str(refused))
            if facts is None:
                try:
                    facts = self._requests.build(repo_id, commit, info, token)
                except ModelNotReady as e:
                    self._refused_commits.put((repo_id, commit), e)
                    raise
                self._facts.put((repo_id, commit), facts)
                self._store_put(repo_id, commit, facts)
            elif info.gated:
                self._requests.check_access(repo_id, commit, info, token)
            return facts

    def _lookup(self, repo_id: str, commit: str) -> ModelFacts | None:
        facts = self._facts.get((repo_id, commit))
        if facts is not None or self._store is None:
            return facts
        try:
            facts = self._store.get(repo_id, commit)
        except Exception:
            log.warning("facts store: reading %s@%s failed; asking the Hub", repo_id, commit, exc_info=True)
            return None
        if facts is not None:
            self._facts.put((repo_id, commit), facts)
        return facts

    def _store_put(self, repo_id: str, commit: str, facts: ModelFacts) -> None:
        if self._store is None:
            return
        try:
            self._store.put(repo_id, commit, facts)
        except Exception:
            log.warning("facts store: keeping %s@%s failed", repo_id, commit, exc_info=True)


def _digest(token: str | None) -> str:
    return hashlib.sha256(token.encode()).hexdigest() if token else ""
