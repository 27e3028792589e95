"""Observe hands decide KEDA's HPA of the order (``keda-hpa-<order>``), never the controller's own
HPA of before KEDA (``<order>``, pruned): ScalingHealthy reads what the autoscaler wants from it."""

from __future__ import annotations

import builtins
from typing import Any
from unittest import mock

from controller import desired
from controller.config.settings import Settings
from controller.kinds import KINDS, Cache
from controller.observe import Observer
from controller.store import Store
from shared import names
from tests.unit.controller.builders import class_dict, make_order


class _Reader:
    def __init__(self, objs: list[dict[str, Any]]) -> None:
        self._objs = objs

    def get(self, namespace: str | None, name: str) -> dict[str, Any] | None:
        for o in self._objs:
            if o["metadata"]["name"] == name and o["metadata"].get("namespace") == namespace:
                return o
        return None

    def list(self, namespace: str | None = None) -> list[dict[str, Any]]:
        return list(self._objs)

    def labelled(self, namespace: str, value: str) -> builtins.list[dict[str, Any]]:
        return [o for o in self._objs if (o["metadata"].get("labels") or {}).get(names.LABEL_ORDER) == value]


def _hpa(name: str, desired: int) -> dict[str, Any]:
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": name, "namespace": "support", "labels": {names.LABEL_ORDER: "support-llm"}},
        "status": {"desiredReplicas": desired},
    }


def test_names_keda_hpa_is_kedas_name_for_the_scaled_object_of_the_order() -> None:
    assert names.keda_hpa("support-llm") == "keda-hpa-support-llm"


def test_observe_reads_kedas_hpa_not_the_legacy_one() -> None:
    desired.clear()  # no render remembered for the order: observe reads no name from the API
    readers: dict[Cache, Any] = {k.cache: _Reader([]) for k in KINDS}
    readers[Cache.CLASSES] = _Reader([class_dict()])
    readers[Cache.HPAS] = _Reader([_hpa("support-llm", 1), _hpa("keda-hpa-support-llm", 3)])
    observer = Observer(
        api=None,
        store=Store(readers),
        hub=mock.MagicMock(),
        probes=mock.MagicMock(),
        progress=mock.MagicMock(),
        ledger=mock.MagicMock(epoch=0, exhausted_since=lambda key: None),
        settings=Settings(),
        applied_plan=lambda key: None,
    )
    with mock.patch.object(Observer, "_model", return_value=None):
        snap = observer.snapshot(make_order(), {"metadata": {"resourceVersion": "1"}}, 0.0)
    assert snap.hpa is not None and snap.hpa["metadata"]["name"] == "keda-hpa-support-llm"
    assert snap.hpa["status"]["desiredReplicas"] == 3
