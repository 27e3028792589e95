"""Model facts from a Hugging Face Hub (or a mirror of it) through huggingface_hub. I/O edge.

The reconciler calls ``HubClient.fetch_facts`` for every order whose model comes from Hugging
Face. Failures come back as three exceptions the reconciler turns into reasons:
``ModelNotFound``, ``ModelAccessDenied`` and ``ModelSourceUnavailable`` (retried with backoff).

What it costs, in HTTP requests to the Hub, for N orders of one model (same repo, revision, token):

- resolving the revision to a commit is one ``GET /api/models/{repo}[/revision/{rev}]?blobs=True``,
  cached per (repo, revision, token digest) for ``revision_ttl`` seconds (default 60);
- the facts of a commit are fetched once and cached per (repo, commit) for the life of the
  process (a commit never changes): one ``GET config.json`` when the repo has one, plus one
  ``Range`` GET per safetensors file (``model.safetensors``, or the index and then each shard;
  a second GET only for a shard whose header exceeds 100 kB). A GGUF repo costs one ``Range`` GET
  of the served file's first 256 kB, for the config numbers in its header;
- a gated repository's model info is public, so a token that did not fetch the facts itself
  proves its access with one ``HEAD`` of a file, cached with the revision.

So N orders within one TTL window cost 1 + F requests in all (F = the facts requests above: for
a 4-shard model config.json + index + 4 headers = 6, so 7 in all), and after that 1 request per
TTL window per distinct (repo, revision, token), 2 for a gated repo.

A refusal (ModelNotFound, ModelAccessDenied) is remembered per (repo, revision, token digest) for
``refusal_ttl`` seconds (default 10): N orders of a missing or forbidden model cost the requests of
one attempt (1 or 2) per 10 s, and a new token (a new digest) is tried at once.
ModelSourceUnavailable is never cached: each retry asks again. Concurrent callers of one key wait for the first one (single flight).

The token is sent as ``Authorization: Bearer``, is never logged, never put in a message, and is
cached only as a SHA-256 digest. ``token=None`` means anonymous: the process's own Hugging Face
login (HF_TOKEN, ~/.cache/huggingface) is never used on a user's behalf.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NoReturn, TypeVar

import httpx2
from huggingface_hub import HfApi, get_hf_file_metadata, get_session, hf_hub_url, hf_raise_for_status
from huggingface_hub.errors import (
    GatedRepoError,
    HfHubHTTPError,
    RemoteEntryNotFoundError,
    RepositoryNotFoundError,
    RevisionNotFoundError,
    SafetensorsParsingError,
)
from huggingface_hub.hf_api import ModelInfo
from huggingface_hub.utils._headers import build_hf_headers

from controller.facts import ModelFacts
from controller.model_facts import (
    ModelFactsError,
    TensorMeta,
    gguf_parts,
    model_facts,
    parse_gguf_header,
    pick_gguf,
    sibling_sizes,
    weight_format,
)

T = TypeVar("T")

DEFAULT_ENDPOINT = "https://huggingface.co"
GGUF_HEADER_BYTES = 256 * 1024
"""How much of a GGUF file is read for its metadata: llama.cpp writes the architecture keys before
the tokenizer arrays, so they are well within this."""


class ModelNotFound(Exception):  # noqa: N818 - named after the reason it becomes
    """The repository, revision or its weights do not exist (or are invisible to the token)."""


class ModelAccessDenied(Exception):  # noqa: N818
    """The repository is gated, or the token was refused."""


class ModelSourceUnavailable(Exception):  # noqa: N818
    """The Hub could not be reached, timed out, or answered 5xx / 429: worth retrying."""


@dataclass(frozen=True, slots=True)
class _Resolved:
    commit: str
    expires: float


class HubClient:
    """Fetches and caches ``ModelFacts``; one per controller process, safe to share between workers.

    ``on_call(outcome)`` is called once per HTTP request made, with ``ok``, ``not_found``,
    ``denied`` or ``unavailable``; ``clock`` returns seconds (monotonic) for the TTLs.
    """

    def __init__(
        self,
        *,
        endpoint: str = DEFAULT_ENDPOINT,
        timeout: float = 10.0,
        revision_ttl: float = 60.0,
        refusal_ttl: float = 10.0,
        max_cached_models: int = 256,
        on_call: Callable[[str], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.endpoint = (endpoint or DEFAULT_ENDPOINT).rstrip("/")
        self._api = HfApi(endpoint=self.endpoint, token=False)
        self._timeout = timeout
        self._ttl = revision_ttl
        self._refusal_ttl = refusal_ttl
        self._max = max_cached_models
        self._on_call = on_call or (lambda outcome: None)
        self._clock = clock
        self._guard = threading.Lock()
        self._locks: dict[tuple[str, ...], threading.Lock] = {}
        self._revisions: OrderedDict[tuple[str, str, str], _Resolved] = OrderedDict()
        self._refusals: dict[tuple[str, str, str], tuple[float, Exception]] = {}
        self._facts: OrderedDict[tuple[str, str], ModelFacts] = OrderedDict()

    # ---- the one public call

    def fetch_facts(self, *, repo_id: str, revision: str | None, token: str | None) -> ModelFacts:
        """The facts of ``repo_id`` at ``revision`` (default ``main``), as seen with ``token``."""
        rev = revision or "main"
        key = (repo_id, rev, _digest(token))
        with self._lock(key):
            hit = self._cached(key)
            if hit is not None:
                return hit
            try:
                info = self._call(repo_id, rev, token, lambda: self._model_info(repo_id, revision, token))
                commit = info.sha or rev
                with self._lock((repo_id, commit)):
                    facts = self._lookup_facts((repo_id, commit))
                    if facts is None:
                        facts = self._build(repo_id, commit, info, token)
                        self._store_facts((repo_id, commit), facts)
                    elif info.gated:
                        self._check_access(repo_id, commit, info, token)
            except (ModelNotFound, ModelAccessDenied) as e:
                self._store_refusal(key, e)
                raise
            self._store_revision(key, commit)
            return facts

    # ---- caches

    def _lock(self, key: tuple[str, ...]) -> threading.Lock:
        """One lock per revision key and per commit key; a commit lock is only taken under a revision
        lock, never the other way round, so they cannot deadlock."""
        with self._guard:
            return self._locks.setdefault(key, threading.Lock())

    def _cached(self, key: tuple[str, str, str]) -> ModelFacts | None:
        """The facts cached for this key, or None; raises a refusal cached for it."""
        with self._guard:
            refusal = self._refusals.get(key)
            if refusal is not None and refusal[0] > self._clock():
                raise type(refusal[1])(str(refusal[1]))
            entry = self._revisions.get(key)
            if entry is None or entry.expires <= self._clock():
                return None
            facts = self._facts.get((key[0], entry.commit))
            if facts is not None:
                self._facts.move_to_end((key[0], entry.commit))
            return facts

    def _lookup_facts(self, key: tuple[str, str]) -> ModelFacts | None:
        with self._guard:
            return self._facts.get(key)

    def _store_facts(self, key: tuple[str, str], facts: ModelFacts) -> None:
        with self._guard:
            self._facts[key] = facts
            while len(self._facts) > self._max:
                self._facts.popitem(last=False)

    def _store_refusal(self, key: tuple[str, str, str], error: Exception) -> None:
        with self._guard:
            self._refusals[key] = (self._clock() + self._refusal_ttl, error)
            self._revisions.pop(key, None)
            while len(self._refusals) > 4 * self._max:
                self._refusals.pop(next(iter(self._refusals)))

    def _store_revision(self, key: tuple[str, str, str], commit: str) -> None:
        with self._guard:
            self._refusals.pop(key, None)
            self._revisions[key] = _Resolved(commit, self._clock() + self._ttl)
            self._revisions.move_to_end(key)
            while len(self._revisions) > 4 * self._max:
                self._revisions.popitem(last=False)

    # ---- Hub requests (each one is one HTTP request)

    def _model_info(self, repo_id: str, revision: str | None, token: str | None) -> ModelInfo:
        return self._api.model_info(
            repo_id, revision=revision, files_metadata=True, token=token or False, timeout=self._timeout
        )

    def _build(self, repo_id: str, commit: str, info: ModelInfo, token: str | None) -> ModelFacts:
        doc = info_document(info)
        names = {s["rfilename"] for s in doc["siblings"]}
        config: dict[str, Any] | None = None
        if "config.json" in names:
            config = self._call(
                repo_id, commit, token, lambda: self._get_json(repo_id, commit, "config.json", token)
            )
        tensors = self._tensors(repo_id, commit, names, token)
        gguf_metadata = self._gguf_metadata(repo_id, commit, doc, token) if tensors is None else None
        try:
            return model_facts(
                repo_id=repo_id,
                commit=commit,
                info=doc,
                config=config,
                tensors=tensors,
                gguf_metadata=gguf_metadata,
            )
        except ModelFactsError as e:
            raise ModelNotFound(str(e)) from None

    def _tensors(
        self, repo_id: str, commit: str, names: set[str], token: str | None
    ) -> list[TensorMeta] | None:
        if "model.safetensors" in names:
            shards = ["model.safetensors"]
        elif "model.safetensors.index.json" in names:
            index = self._call(
                repo_id,
                commit,
                token,
                lambda: self._get_json(repo_id, commit, "model.safetensors.index.json", token),
            )
            shards = sorted(set((index.get("weight_map") or {}).values()))
        else:
            return None
        tensors: list[TensorMeta] = []
        for shard in shards:
            meta = self._call(
                repo_id,
                commit,
                token,
                lambda shard=shard: self._api.parse_safetensors_file_metadata(  # type: ignore[misc]
                    repo_id, shard, revision=commit, token=token or False, timeout=self._timeout
                ),
            )
            tensors.extend(TensorMeta(n, t.dtype, tuple(t.shape)) for n, t in meta.tensors.items())
        return tensors

    def _gguf_metadata(
        self, repo_id: str, commit: str, doc: dict[str, Any], token: str | None
    ) -> dict[str, Any] | None:
        """The header key/values of the GGUF file that will be served (one Range GET), if any."""
        files = sibling_sizes(doc)
        if weight_format(files) != "GGUF":
            return None
        first = gguf_parts(files, pick_gguf(files)[0])[0]
        url = hf_hub_url(repo_id, first, revision=commit, endpoint=self.endpoint)

        def read() -> bytes:
            headers = {**build_hf_headers(token=token or False), "Range": f"bytes=0-{GGUF_HEADER_BYTES - 1}"}
            with get_session().stream("GET", url, headers=headers, timeout=self._timeout) as response:
                hf_raise_for_status(response)
                data = b""
                for chunk in response.iter_bytes():  # a server ignoring Range must not send us gigabytes
                    data += chunk
                    if len(data) >= GGUF_HEADER_BYTES:
                        break
                return data[:GGUF_HEADER_BYTES]

        data = self._call(repo_id, commit, token, read)
        try:
            return parse_gguf_header(data)
        except ModelFactsError:
            return None  # the model info's `gguf` facts still hold; only the config numbers are missing

    def _get_json(self, repo_id: str, commit: str, filename: str, token: str | None) -> dict[str, Any]:
        url = hf_hub_url(repo_id, filename, revision=commit, endpoint=self.endpoint)
        response = get_session().get(
            url, headers=build_hf_headers(token=token or False), timeout=self._timeout
        )
        hf_raise_for_status(response)
        data = json.loads(response.content)
        if not isinstance(data, dict):
            raise ValueError(f"{filename} is not a JSON object")
        return data

    def _check_access(self, repo_id: str, commit: str, info: ModelInfo, token: str | None) -> None:
        """One HEAD of a file: model info of a gated repo is public, its files are not."""
        names = [s.rfilename for s in info.siblings or []]
        filename = "config.json" if "config.json" in names else (names[0] if names else "config.json")
        url = hf_hub_url(repo_id, filename, revision=commit, endpoint=self.endpoint)
        self._call(
            repo_id,
            commit,
            token,
            lambda: get_hf_file_metadata(url, token=token or False, timeout=self._timeout),
        )

    # ---- error translation

    def _call(self, repo_id: str, revision: str, token: str | None, request: Callable[[], T]) -> T:
        try:
            result = request()
        except Exception as e:
            self._raise_translated(e, repo_id, revision, token)
        self._on_call("ok")
        return result

    def _raise_translated(self, e: Exception, repo_id: str, revision: str, token: str | None) -> NoReturn:
        where = f"the model hub at {self.endpoint}"
        where_ = where[0].upper() + where[1:]  # at the start of a sentence
        status = e.response.status_code if isinstance(e, HfHubHTTPError) and e.response is not None else None
        if isinstance(e, GatedRepoError):
            self._on_call("denied")
            if token:
                raise ModelAccessDenied(
                    "The token in `spec.model.authSecretRef` has no access to the gated repository "
                    f"`{repo_id}`: request access on its page with that token's account, "
                    "or use another token."
                ) from None
            raise ModelAccessDenied(
                f"Repository `{repo_id}` is gated: `spec.model.authSecretRef` must name a Secret holding a "
                "Hugging Face token of an account that was granted access."
            ) from None
        if isinstance(e, RepositoryNotFoundError):
            if token and status == 401:
                self._on_call("denied")
                raise ModelAccessDenied(
                    f"{where_} refused the token in `spec.model.authSecretRef` (HTTP 401) for `{repo_id}`: "
                    "the token must be a valid Hugging Face access token."
                ) from None
            self._on_call("not_found")
            raise ModelNotFound(
                f"Repository `{repo_id}` does not exist on {where}, or is private and not visible to the "
                "token given: check `spec.model.ref.name`."
            ) from None
        if isinstance(e, RevisionNotFoundError):
            self._on_call("not_found")
            raise ModelNotFound(
                f"Revision `{revision}` does not exist in repository `{repo_id}`: "
                "`spec.model.ref.revision` must name a branch, tag or commit of it."
            ) from None
        if isinstance(e, RemoteEntryNotFoundError):
            self._on_call("not_found")
            raise ModelNotFound(
                f"A file listed by repository `{repo_id}` at `{revision}` is missing on {where}."
            ) from None
        if isinstance(e, HfHubHTTPError) and status in (401, 403):
            self._on_call("denied")
            raise ModelAccessDenied(
                f"{where_} refused access to `{repo_id}` (HTTP {status}): "
                "the token in `spec.model.authSecretRef` must be valid and have access to the repository."
            ) from None
        self._on_call("unavailable")
        if isinstance(e, HfHubHTTPError) and status is not None:
            raise ModelSourceUnavailable(
                f"{where_} answered HTTP {status} for `{repo_id}`; retrying with backoff."
            ) from None
        if isinstance(e, httpx2.TimeoutException):
            raise ModelSourceUnavailable(
                f"{where_} did not answer within {self._timeout:g}s for `{repo_id}`; retrying with backoff."
            ) from None
        if isinstance(e, httpx2.HTTPError | OSError):
            raise ModelSourceUnavailable(
                f"{where_} could not be reached ({type(e).__name__}); retrying with backoff."
            ) from None
        if isinstance(e, SafetensorsParsingError | ValueError):
            raise ModelSourceUnavailable(
                f"{where_} served unreadable metadata for `{repo_id}` at `{revision}` ({type(e).__name__})."
            ) from None
        raise e


def info_document(info: ModelInfo) -> dict[str, Any]:
    """The fields of the model-info API document that ``model_facts`` reads, from a ``ModelInfo``."""
    siblings = [{"rfilename": s.rfilename, "size": s.size} for s in info.siblings or []]
    doc: dict[str, Any] = {
        "id": info.id,
        "sha": info.sha,
        "pipeline_tag": info.pipeline_tag,
        "tags": list(info.tags or []),
        "library_name": info.library_name,
        "gated": info.gated,
        "siblings": siblings,
        "config": info.config or {},
        "gguf": info.gguf or {},
    }
    if info.safetensors is not None:
        doc["safetensors"] = {
            "parameters": dict(info.safetensors.parameters),
            "total": info.safetensors.total,
        }
    return doc


def _digest(token: str | None) -> str:
    return hashlib.sha256(token.encode()).hexdigest() if token else ""
