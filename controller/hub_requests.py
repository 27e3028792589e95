"""The HTTP requests to the Hub, each retried on 429/503 and translated. I/O edge.

``HubRequests.call`` runs one request: on HTTP 429 or 503 it waits (``controller.hub_retry``) and
asks again, within the policy's attempts and budget; any failure leaves as ``ModelNotFound``,
``ModelAccessDenied`` or ``ModelSourceUnavailable`` (``controller.hub_errors``). ``on_call(outcome)``
is called once per HTTP request made. A ``Retry-After`` also closes the gate for every other call of
this client until it has passed: a rate limit is the client's, not one repository's, so the other
orders wait (or give up at once) instead of spending requests that would be refused too.

``build`` makes the requests that give the facts of one commit (see ``controller.hub`` for what they
cost).
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

from huggingface_hub import HfApi, get_hf_file_metadata, get_session, hf_hub_url, hf_raise_for_status
from huggingface_hub.hf_api import ModelInfo
from huggingface_hub.utils._headers import build_hf_headers

from controller.facts import ModelFacts
from controller.hub_errors import ModelNotFound, ModelSourceUnavailable, translate
from controller.hub_retry import RETRY_STATUSES, RetryPolicy, backoff_delay
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

GGUF_HEADER_BYTES = 256 * 1024
"""How much of a GGUF file is read for its metadata: llama.cpp writes the architecture keys before
the tokenizer arrays, so they are well within this."""


class HubRequests:
    """The requests of one ``HubClient``. ``clock`` is monotonic seconds, ``wall_clock`` epoch seconds
    (for ``Retry-After`` dates), ``sleep`` waits, ``rand`` draws the jitter in [0, 1)."""

    def __init__(
        self,
        *,
        endpoint: str,
        timeout: float,
        retry: RetryPolicy,
        on_call: Callable[[str], None],
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
        rand: Callable[[], float] = random.random,
    ) -> None:
        self.endpoint = endpoint
        self._api = HfApi(endpoint=endpoint, token=False)
        self._timeout = timeout
        self._retry = retry
        self._on_call = on_call
        self._clock = clock
        self._wall_clock = wall_clock
        self._sleep = sleep
        self._rand = rand
        self._gate_lock = threading.Lock()
        self._not_before = 0.0  # on ``clock``: no request before this (the last Retry-After)

    # ---- one request, retried and translated

    def call(self, repo_id: str, revision: str, token: str | None, request: Callable[[], T]) -> T:
        waited = 0.0
        attempt = 0
        while True:
            waited += self._pass_gate(repo_id, budget=self._retry.budget - waited)
            try:
                result = request()
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
                if not isinstance(error, ModelSourceUnavailable) or error.status not in RETRY_STATUSES:
                    raise error from None
                delay = backoff_delay(attempt, error.retry_after, self._retry, self._rand())
                if error.retry_after is not None:
                    self._close_gate(error.retry_after)
                attempt += 1
                if attempt >= self._retry.attempts or waited + delay > self._retry.budget:
                    error.retry_after = max(delay, error.retry_after or 0.0)
                    raise error from None
                self._sleep(delay)
                waited += delay
                continue
            self._on_call("ok")
            return result

    def _pass_gate(self, repo_id: str, *, budget: float) -> float:
        """Wait out a Retry-After another call received, within ``budget``; the seconds waited."""
        with self._gate_lock:
            wait = self._not_before - self._clock()
        if wait <= 0:
            return 0.0
        if wait > budget:
            raise ModelSourceUnavailable(
                f"The model hub at {self.endpoint} asked to slow down; `{repo_id}` is asked again "
                f"in {wait:.0f}s.",
                status=429,
                retry_after=wait,
            )
        self._sleep(wait)
        return wait

    def _close_gate(self, seconds: float) -> None:
        with self._gate_lock:
            self._not_before = max(self._not_before, self._clock() + seconds)

    # ---- the requests

    def model_info(self, repo_id: str, revision: str | None, token: str | None) -> ModelInfo:
        """``GET /api/models/{repo}[/revision/{rev}]?blobs=True``: the commit sha and the file list."""
        return self.call(
            repo_id,
            revision or "main",
            token,
            lambda: self._api.model_info(
                repo_id, revision=revision, files_metadata=True, token=token or False, timeout=self._timeout
            ),
        )

    def build(self, repo_id: str, commit: str, info: ModelInfo, token: str | None) -> ModelFacts:
        """The facts of ``commit``: config.json, the safetensors headers or the GGUF header."""
        doc = info_document(info)
        names = {s["rfilename"] for s in doc["siblings"]}
        config: dict[str, Any] | None = None
        if "config.json" in names:
            config = self.call(
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

    def _tensors(
        self, repo_id: str, commit: str, names: set[str], token: str | None
    ) -> list[TensorMeta] | None:
        if "model.safetensors" in names:
            shards = ["model.safetensors"]
        elif "model.safetensors.index.json" in names:
            index = self.call(
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
            meta = self.call(
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

        data = self.call(repo_id, commit, token, read)
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
