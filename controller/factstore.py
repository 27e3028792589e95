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
"""

from __future__ import annotations

import json
import logging
import threading
from typing import Any

from pydantic import ValidationError

from controller.facts import ModelFacts
from controller.kube import apply as kapi
from controller.kube import errors as kerr
from controller.kube.client import request
from shared import names

log = logging.getLogger(__name__)
NAME = "inference-model-facts"
FORMAT = 4  # 2: requires_remote_code; 3: files (the selection the fetcher downloads), source_uri; 4: kv_latent (MLA)


def key_of(repo: str, commit: str) -> str:
    return f"{names.short_hash(f'{FORMAT}:{repo}@{commit}', 24)}.json"


class ConfigMapFactsStore:
    """The ``controller.factcache.FactsStore`` the controller gives its ``HubClient``."""

    def __init__(self, api: Any, namespace: str) -> None:
        self._api = api
        self._namespace = namespace
        self._lock = threading.Lock()
        self._memory: dict[str, ModelFacts] = {}
        self._loaded = False

    def get(self, repo: str, commit: str, /) -> ModelFacts | None:
        key = key_of(repo, commit)
        with self._lock:
            hit = self._memory.get(key)
            loaded = self._loaded
        if hit is not None or loaded:
            return hit
        self._load()
        with self._lock:
            return self._memory.get(key)

    def _load(self) -> None:
        """Read the whole store once (one GET serves every model after a restart)."""
        try:
            cm = kapi.get(self._api, "v1", "ConfigMap", namespace=self._namespace, name=NAME)
        except kerr.KubeError as e:
            log.warning("facts store %s/%s not read: %s", self._namespace, NAME, e)
            return
        found: dict[str, ModelFacts] = {}
        for key, text in ((cm or {}).get("data") or {}).items():
            try:
                found[key] = ModelFacts.model_validate_json(text)
            except ValidationError:
                continue
        with self._lock:
            self._memory.update(found)
            self._loaded = True

    def put(self, repo: str, commit: str, facts: ModelFacts, /) -> None:
        """Record the facts of a resolved commit; best effort (the Hub can answer again)."""
        key = key_of(repo, commit)
        with self._lock:
            if key in self._memory:
                return
            self._memory[key] = facts
        data = {key: facts.model_dump_json()}
        try:
            self._patch(data)
        except kerr.NotFound:
            try:
                kapi.create(self._api, self._configmap(data), field_manager=names.FIELD_MANAGER)
            except kerr.AlreadyExists:
                self._patch(data)
            except kerr.KubeError as e:
                log.warning("facts of %s@%s not recorded: %s", repo, commit, e)
        except kerr.KubeError as e:
            log.warning("facts of %s@%s not recorded: %s", repo, commit, e)

    def _patch(self, data: dict[str, str]) -> None:
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
