"""The durable facts store: ``ModelFacts`` per (repo, commit) in one ConfigMap of the controller's
namespace, ``inference-model-facts``, with a memory cache in front. I/O edge.

What an order was resolved to is a record (``status.model.revision``, the commit sha); the facts
of that commit live here, shared by every order of the model and across restarts. So a steady
order never asks the Hub again: not after a restart, not with the Hub down, not on resync.

One ConfigMap, one key per commit (``<digest>.json``; about 1 KiB each, up to 10 KiB for a model of
200 shards because the facts list the files the fetcher downloads, so several hundred models fit in
the 1 MiB object limit): the shipped Role names it, so the controller reads no other
ConfigMap. A key is added with a JSON merge patch, which keeps every other key. The stored facts
carry ``FORMAT``; facts of another format are resolved again (one Hub call per model).

The store is bounded: facts heavier than ``MAX_ENTRY_BYTES`` are not kept (the process cache still
has them), and when the keys pass ``MAX_BYTES`` in all, the least recently used ones (as this
process saw them) are removed in the same patch. An order whose facts were evicted asks the Hub
once more (its recorded commit), so it costs one resolution, never correctness.
"""

from __future__ import annotations

import json
import logging
import threading
from collections import OrderedDict
from typing import Any

from pydantic import ValidationError

from controller.kube import apply as kapi
from controller.kube import errors as kerr
from controller.kube.client import request
from controller.model_facts.facts import ModelFacts
from shared import names

log = logging.getLogger(__name__)
NAME = "inference-model-facts"
FORMAT = 5  # 2: requires_remote_code; 3: files (the selection the fetcher downloads), source_uri; 4: kv_latent (MLA);
# 5: max_seq_length (sentence-transformers), which caps --max-model-len: facts of 4 lack it and are read again
MAX_BYTES = 768 * 1024
"""The store's keys in all, in bytes of JSON: well within the 1 MiB object limit."""
MAX_ENTRY_BYTES = 128 * 1024
"""The heaviest facts kept (a model of 200 shards is about 10 KiB)."""


def key_of(repo: str, commit: str) -> str:
    return f"{names.short_hash(f'{FORMAT}:{repo}@{commit}', 24)}.json"


class ConfigMapFactsStore:
    """The ``controller.modelhub.cache.FactsStore`` the controller gives its ``HubClient``."""

    def __init__(self, api: Any, namespace: str, *, max_bytes: int = MAX_BYTES) -> None:
        self._api = api
        self._namespace = namespace
        self._max_bytes = max_bytes
        self._lock = threading.Lock()
        self._memory: OrderedDict[str, tuple[ModelFacts, int]] = OrderedDict()  # least recently used first
        self._bytes = 0
        self._loaded = False

    def get(self, repo: str, commit: str, /) -> ModelFacts | None:
        key = key_of(repo, commit)
        with self._lock:
            loaded = self._loaded
        if not loaded:
            self._load()
        with self._lock:
            hit = self._memory.get(key)
            if hit is not None:
                self._memory.move_to_end(key)
            return hit[0] if hit is not None else None

    def _load(self) -> None:
        """Read the whole store once (one GET serves every model after a restart)."""
        try:
            cm = kapi.get(self._api, "v1", "ConfigMap", namespace=self._namespace, name=NAME)
        except kerr.KubeError as e:
            log.warning("facts store %s/%s not read: %s", self._namespace, NAME, e)
            return
        found: dict[str, tuple[ModelFacts, int]] = {}
        for key, text in ((cm or {}).get("data") or {}).items():
            try:
                found[key] = (ModelFacts.model_validate_json(text), len(text))
            except ValidationError:
                continue
        with self._lock:
            for key, entry in found.items():
                if key not in self._memory:
                    self._memory[key] = entry
                    self._memory.move_to_end(key, last=False)  # what this process put is newer
                    self._bytes += entry[1]
            self._loaded = True

    def put(self, repo: str, commit: str, facts: ModelFacts, /) -> None:
        """Record the facts of a resolved commit; best effort (the Hub can answer again)."""
        key = key_of(repo, commit)
        text = facts.model_dump_json()
        if len(text) > MAX_ENTRY_BYTES:
            log.info("facts of %s@%s not recorded: %d bytes of JSON", repo, commit, len(text))
            return
        with self._lock:
            loaded = self._loaded
        if not loaded:
            self._load()
        with self._lock:
            if key in self._memory:
                return
            self._memory[key] = (facts, len(text))
            self._bytes += len(text)
            evicted: list[str] = []
            while self._bytes > self._max_bytes and len(self._memory) > 1:
                old, (_, size) = self._memory.popitem(last=False)
                self._bytes -= size
                evicted.append(old)
        data: dict[str, str | None] = {key: text, **dict.fromkeys(evicted)}
        try:
            self._patch(data)
        except kerr.NotFound:
            try:
                kapi.create(self._api, self._configmap({key: text}), field_manager=names.FIELD_MANAGER)
            except kerr.AlreadyExists:
                self._patch(data)
            except kerr.KubeError as e:
                log.warning("facts of %s@%s not recorded: %s", repo, commit, e)
        except kerr.KubeError as e:
            log.warning("facts of %s@%s not recorded: %s", repo, commit, e)

    def _patch(self, data: dict[str, str | None]) -> None:
        request(
            self._api,
            "PATCH",
            f"/api/v1/namespaces/{self._namespace}/configmaps/{NAME}",
            body={"data": data},
            content_type="application/merge-patch+json",
        )

    def _configmap(self, data: dict[str, str]) -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": NAME,
                "namespace": self._namespace,
                "labels": {names.LABEL_MANAGED_BY: names.MANAGED_BY},
                "annotations": {"ai.deckhouse.io/facts-format": json.dumps(FORMAT)},
            },
            "data": data,
        }
