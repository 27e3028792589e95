"""The HTTP requests to the Hub, each bounded and translated. I/O edge.

``HubRequests.call`` runs one request and never waits: any failure leaves at once as
``ModelNotFound``, ``ModelAccessDenied``, ``ModelSourceUnavailable`` (``controller.modelhub.errors``) or
``ModelNotReady`` (a bound passed, ``controller.modelhub.limits``), and ``controller.modelhub.client`` decides when the
order asks again, so a rate limit never holds a worker. ``on_call(outcome)`` is called once per HTTP
request made. A ``Retry-After`` closes the gate of the token it was answered to (anonymous calls share
one) until it has passed: a rate limit is the account's, so the other calls of that account fail fast
instead of spending requests that would be refused too, and other accounts are not held back.

``build`` makes the requests that give the facts of one commit (see ``controller.modelhub.client`` for what they
cost); every body is streamed within the ``HubLimits`` (``controller.modelhub.read``).
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar
from urllib.parse import quote

from huggingface_hub import get_hf_file_metadata, hf_hub_url
from huggingface_hub.hf_api import ModelInfo

from controller.model_facts import (
    ImplausibleModelError,
    ModelFactsError,
    TensorMeta,
    gguf_parts,
    model_facts,
    parse_gguf_header,
    pick_gguf,
    sibling_sizes,
    weight_format,
)
from controller.model_facts.facts import ModelFacts
from controller.model_facts.sane import check_config
from controller.model_facts.sentence import sentence_config_files
from controller.modelhub.errors import translate
from controller.modelhub.exceptions import ModelNotFound, ModelNotReady, ModelSourceUnavailable
from controller.modelhub.limits import HubLimits, parse_header, parse_json, shard_names, too_large
from controller.modelhub.read import BoundedReader

T = TypeVar("T")

GGUF_HEADER_BYTES = 256 * 1024
"""How much of a GGUF file is read for its metadata: llama.cpp writes the architecture keys before
the tokenizer arrays, so they are well within this."""


class HubRequests:
    """The requests of one ``HubClient``. ``clock`` is monotonic seconds, ``wall_clock`` epoch seconds
    (for ``Retry-After`` dates)."""

    def __init__(
        self,
        *,
        endpoint: str,
        timeout: float,
        on_call: Callable[[str], None],
        limits: HubLimits | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        self.endpoint = endpoint
        self._timeout = timeout
        self._limits = limits or HubLimits()
        self._read = BoundedReader(endpoint=endpoint, timeout=timeout, limits=self._limits)
        self._on_call = on_call
        self._clock = clock
        self._wall_clock = wall_clock
        self._gate_lock = threading.Lock()
        self._not_before: dict[str, float] = {}  # token digest -> on ``clock``: no request before this

    # ---- one request, translated

    def call(self, repo_id: str, revision: str, token: str | None, request: Callable[[], T]) -> T:
        account = _account(token)
        self._pass_gate(repo_id, account)
        try:
            result = request()
        except ModelNotReady:
            self._on_call("refused")
            raise
        except Exception as e:
            outcome, error = translate(
                e,
                endpoint=self.endpoint,
                repo_id=repo_id,
                revision=revision,
                token=token,
                timeout=self._timeout,
                now=self._wall_clock(),
            )
            self._on_call(outcome)
            if error is e:
                raise
            if isinstance(error, ModelSourceUnavailable) and error.retry_after is not None:
                self._close_gate(account, error.retry_after)
            raise error from None
        self._on_call("ok")
        return result

    def _pass_gate(self, repo_id: str, account: str) -> None:
        """Fail fast while a Retry-After this account received has not passed."""
        with self._gate_lock:
            until = self._not_before.get(account, 0.0)
            wait = until - self._clock()
            if wait <= 0 and account in self._not_before:
                del self._not_before[account]
        if wait > 0:
            raise ModelSourceUnavailable(
                f"The model hub at {self.endpoint} asked to slow down; `{repo_id}` is asked again "
                f"in {wait:.0f}s.",
                status=429,
                retry_after=wait,
            )

    def _close_gate(self, account: str, seconds: float) -> None:
        with self._gate_lock:
            until = self._clock() + seconds
            self._not_before[account] = max(self._not_before.get(account, 0.0), until)
            if len(self._not_before) > 4096:  # tokens seen once: the gates that have passed go
                now = self._clock()
                self._not_before = {k: v for k, v in self._not_before.items() if v > now}

    # ---- the requests

    def model_info(self, repo_id: str, revision: str | None, token: str | None) -> ModelInfo:
        """``GET /api/models/{repo}[/revision/{rev}]?blobs=True``: the commit sha and the file list."""
        url = f"{self.endpoint}/api/models/{repo_id}"
        if revision is not None:
            url += f"/revision/{quote(revision, safe='')}"
        limits = self._limits

        def read() -> ModelInfo:
            data = self._read.get(
                url, token, limits.info_bytes, "the model info", repo_id, params={"blobs": "True"}
            )
            doc = parse_json(data, filename="the model info", repo_id=repo_id, limits=limits)
            siblings = doc.get("siblings") or []
            if not isinstance(siblings, list):
                raise ModelNotReady(
                    f"The model info of repository `{repo_id}` is refused: `siblings` is not a list."
                )
            if len(siblings) > limits.files:
                raise too_large(
                    "the model info", repo_id, f"its listing of {len(siblings)} files", limits.files
                )
            return ModelInfo(**doc)  # type: ignore[no-untyped-call]

        return self.call(repo_id, revision or "main", token, read)

    def build(self, repo_id: str, commit: str, info: ModelInfo, token: str | None) -> ModelFacts:
        """The facts of ``commit``: config.json, the sentence-transformers config, the safetensors
        headers or the GGUF header."""
        doc = info_document(info)
        names = {s["rfilename"] for s in doc["siblings"]}
        config: dict[str, Any] | None = None
        if "config.json" in names:
            config = self.call(
                repo_id,
                commit,
                token,
                lambda: self._read.json_file(
                    repo_id, commit, "config.json", token, self._limits.config_bytes
                ),
            )
        try:
            check_config(
                config or {}, "`config.json`"
            )  # before the headers: an impossible number costs no more
        except ImplausibleModelError as e:
            raise ModelNotReady(f"Repository `{repo_id}` at `{commit}` is refused: {e}") from None
        sentence_config = self._sentence_config(repo_id, commit, names, token)
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
                sentence_config=sentence_config,
            )
        except ImplausibleModelError as e:
            raise ModelNotReady(f"Repository `{repo_id}` at `{commit}` is refused: {e}") from None
        except ModelFactsError as e:
            raise ModelNotFound(str(e)) from None
        except (TypeError, AttributeError, OverflowError, RecursionError) as e:  # a value of the wrong type
            raise ModelNotReady(
                f"Repository `{repo_id}` at `{commit}` is refused: its metadata holds a value of an "
                f"unexpected type or size ({type(e).__name__}: {str(e)[:200]})."
            ) from None

    def check_access(self, repo_id: str, commit: str, info: ModelInfo, token: str | None) -> None:
        """One HEAD of a file: model info of a gated repo is public, its files are not."""
        names = [s.rfilename for s in info.siblings or []]
        filename = "config.json" if "config.json" in names else (names[0] if names else "config.json")
        url = hf_hub_url(repo_id, filename, revision=commit, endpoint=self.endpoint)
        self.call(
            repo_id,
            commit,
            token,
            lambda: get_hf_file_metadata(url, token=token or False, timeout=self._timeout),
        )

    def _sentence_config(
        self, repo_id: str, commit: str, names: set[str], token: str | None
    ) -> dict[str, Any] | None:
        """The sentence-transformers config vLLM reads: the first root ``sentence_*_config.json`` that
        is a non-empty JSON object (``model_facts.sentence``), each read within the config.json bound."""
        for filename in sentence_config_files(names):
            doc = self.call(
                repo_id,
                commit,
                token,
                lambda filename=filename: self._read.json_file(  # type: ignore[misc]
                    repo_id, commit, filename, token, self._limits.config_bytes
                ),
            )
            if doc:
                return doc
        return None

    def _tensors(
        self, repo_id: str, commit: str, names: set[str], token: str | None
    ) -> list[TensorMeta] | None:
        limits = self._limits
        if "model.safetensors" in names:
            shards = ["model.safetensors"]
        elif "model.safetensors.index.json" in names:
            index = self.call(
                repo_id,
                commit,
                token,
                lambda: self._read.json_file(
                    repo_id, commit, "model.safetensors.index.json", token, limits.index_bytes
                ),
            )
            shards = shard_names(index, repo_id=repo_id, limits=limits)
        else:
            return None
        tensors: list[TensorMeta] = []
        budget = limits.headers_total_bytes
        for shard in shards:
            header = self.call(
                repo_id,
                commit,
                token,
                lambda shard=shard, budget=budget: self._read.header(repo_id, commit, shard, token, budget),  # type: ignore[misc]
            )
            budget -= len(header)
            tensors.extend(parse_header(header, filename=shard, repo_id=repo_id, limits=limits))
            del header
            if len(tensors) > limits.tensors:
                raise too_large(shard, repo_id, "the number of tensors up to it", limits.tensors)
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
        data = self.call(
            repo_id,
            commit,
            token,
            lambda: self._read.get(
                url,
                token,
                GGUF_HEADER_BYTES,
                first,
                repo_id,
                range_=(0, GGUF_HEADER_BYTES - 1),
                keep=GGUF_HEADER_BYTES,
            ),
        )
        try:
            return parse_gguf_header(data)
        except ImplausibleModelError as e:
            raise ModelNotReady(f"`{first}` of repository `{repo_id}` is refused: {e}") from None
        except ModelFactsError:
            return None  # the model info's `gguf` facts still hold; only the config numbers are missing


def _account(token: str | None) -> str:
    """Whose rate limit a call counts against: the token's (as a digest), or the anonymous one."""
    return hashlib.sha256(token.encode()).hexdigest() if token else ""


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
