"""The durable facts store: ``ModelFacts`` per (repo, commit), in ConfigMaps of the controller's
namespace, with a memory cache in front. I/O edge.

What an order was resolved to is a record (``status.model.revision``, the commit sha); the facts
of that commit live here, shared by every order of the model and across restarts. So a steady
order never asks the Hub again: not after a restart, not with the Hub down, not on resync.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from pydantic import ValidationError

from controller.facts import ModelFacts
from controller.kube import apply as kapi
from controller.kube import errors as kerr
from shared import names

log = logging.getLogger(__name__)
LABEL = "ai.deckhouse.io/model-facts"
KEY = "facts.json"


def configmap_name(repo: str, commit: str) -> str:
    return f"model-facts-{names.short_hash(f'{repo}@{commit}', 16)}"


class FactsStore:
    def __init__(self, api: Any, namespace: str) -> None:
        self._api = api
        self._namespace = namespace
        self._lock = threading.Lock()
        self._memory: dict[tuple[str, str], ModelFacts] = {}

    def get(self, repo: str, commit: str) -> ModelFacts | None:
        with self._lock:
            hit = self._memory.get((repo, commit))
        if hit is not None:
            return hit
        try:
            cm = kapi.get(
                self._api, "v1", "ConfigMap", namespace=self._namespace, name=configmap_name(repo, commit)
            )
        except kerr.KubeError as e:
            log.warning("facts of %s@%s not read: %s", repo, commit, e)
            return None
        text = ((cm or {}).get("data") or {}).get(KEY)
        if not text:
            return None
        try:
            facts = ModelFacts.model_validate_json(text)
        except ValidationError:
            return None
        if facts.name != repo or facts.revision != commit:
            return None
        with self._lock:
            self._memory[(repo, commit)] = facts
        return facts

    def put(self, facts: ModelFacts) -> None:
        """Record the facts of a resolved commit; best effort (the Hub can answer again)."""
        if not facts.revision:
            return
        key = (facts.name, facts.revision)
        with self._lock:
            if key in self._memory:
                return
            self._memory[key] = facts
        cm = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": configmap_name(*key),
                "namespace": self._namespace,
                "labels": {LABEL: "true", names.LABEL_MANAGED_BY: names.MANAGED_BY},
                "annotations": {"ai.deckhouse.io/model": f"{facts.name}@{facts.revision}"},
            },
            "data": {KEY: facts.model_dump_json()},
        }
        try:
            kapi.apply(self._api, cm, field_manager=names.FIELD_MANAGER)
        except kerr.KubeError as e:
            log.warning("facts of %s@%s not recorded: %s", facts.name, facts.revision, e)
