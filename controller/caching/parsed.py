"""API objects parsed once per version: the same (uid, resourceVersion) gives the same model. Pure.

Validating the order, its class and every recipe on each reconcile was a few percent of the
controller's CPU. The API server gives an object a new resourceVersion whenever it changes, so a
model parsed from one version answers for every later read of that version. The models handed out
are shared between reconciles and workers: nothing may change them (the decision never does; it
builds new objects). An object without a uid or a resourceVersion (a test's) is parsed every time.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Generic, TypeVar

from pydantic import BaseModel

from controller.caching.memo import Memo
from shared.api.inference_class import InferenceServiceClass
from shared.api.order import InferenceService
from shared.api.recipe import InferenceRecipe

M = TypeVar("M", bound=BaseModel)
ENTRIES = 8192  # per kind


class Parsed(Generic[M]):
    """``model.model_validate(raw)``, remembered per object name for its uid and resourceVersion.
    Raises what ``model_validate`` raises (a refusal is not remembered)."""

    def __init__(self, model: type[M], size: int = ENTRIES) -> None:
        self._model = model
        self._memo: Memo[tuple[str, str], tuple[str, str, M]] = Memo(size)

    def __call__(self, raw: Mapping[str, Any]) -> M:
        meta = raw.get("metadata") or {}
        uid, version = meta.get("uid"), meta.get("resourceVersion")
        if not uid or not version:
            return self._model.model_validate(raw)
        key = (str(meta.get("namespace") or ""), str(meta.get("name") or ""))
        hit = self._memo.get(key)
        if hit is not None and hit[0] == uid and hit[1] == version:
            return hit[2]
        parsed = self._model.model_validate(raw)
        self._memo.put(key, (str(uid), str(version), parsed))
        return parsed

    def clear(self) -> None:
        self._memo.clear()


ORDERS: Parsed[InferenceService] = Parsed(InferenceService)
CLASSES: Parsed[InferenceServiceClass] = Parsed(InferenceServiceClass)
RECIPES: Parsed[InferenceRecipe] = Parsed(InferenceRecipe)
