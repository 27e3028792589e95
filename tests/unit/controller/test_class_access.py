"""Classes by namespace (issue 21 item 8): a class's ``namespaceSelector`` against the namespace's
labels, and an order from a namespace it does not select reads ClassNotFound worded exactly as for
a class that does not exist."""

from __future__ import annotations

import builtins
from typing import Any
from unittest import mock

from controller.caching import slim
from controller.conditions import class_access, resolve
from controller.config.settings import Settings
from controller.kinds import KINDS, Cache
from controller.observe import Observer
from controller.store import Store
from shared import reasons as r
from tests.unit.controller.builders import make_class, make_order

SUPPORT = {
    "metadata": {"name": "support", "labels": {"kubernetes.io/metadata.name": "support", "gpu": "yes"}}
}
OTHER = {"metadata": {"name": "other", "labels": {"kubernetes.io/metadata.name": "other"}}}


def klass(selector: Any = None) -> dict[str, Any]:
    raw = make_class().model_dump(mode="json", by_alias=True, exclude_none=True)
    if selector is not None:
        raw["spec"]["namespaceSelector"] = selector
    return raw


def test_an_unset_selector_admits_every_namespace_even_an_unknown_one() -> None:
    assert class_access.admits(klass(), SUPPORT) and class_access.admits(klass(), None)


def test_a_selector_admits_only_the_namespaces_it_selects() -> None:
    k = klass({"matchLabels": {"gpu": "yes"}})
    assert class_access.admits(k, SUPPORT)
    assert not class_access.admits(k, OTHER)
    assert not class_access.admits(k, None), "unknown labels never open a class"


def test_a_broken_selector_admits_nobody_and_makes_the_class_not_ready() -> None:
    k = klass({"matchExpressions": [{"key": "gpu", "operator": "In", "values": []}]})
    assert not class_access.admits(k, SUPPORT)
    problem = class_access.selector_problem(k)
    assert (
        problem
        == "`spec.namespaceSelector.matchExpressions[0].values` must list at least one value when `operator` is `In`"
    )
    v = resolve.class_readiness(
        make_class().spec,
        recipe_names=["vllm"],
        device_class_names=["gpu.nvidia.com", "mig.nvidia.com"],
        selector_error=None,
        namespace_selector_error=problem,
    )
    assert (v.status, v.reason) == ("False", "NamespaceSelectorInvalid") and problem in v.message


def test_the_model_parses_the_selector() -> None:
    k = make_class(spec={"namespaceSelector": {"matchExpressions": [{"key": "gpu", "operator": "Exists"}]}})
    assert k.spec.namespace_selector is not None
    (req,) = k.spec.namespace_selector.match_expressions or []
    assert (req.key, req.operator, req.values) == ("gpu", "Exists", None)


def test_a_class_not_for_the_namespace_reads_exactly_as_a_missing_one() -> None:
    """``observe`` hands ``decide`` no class when the class does not admit the namespace; the verdict
    then carries nothing that depends on the class existing."""
    missing = resolve.class_verdict("gpu-large", None, recipe_names=["vllm"])
    hidden = resolve.class_verdict(
        "gpu-large",
        None if not class_access.admits(klass({"matchLabels": {"gpu": "yes"}}), OTHER) else make_class(),
        recipe_names=["vllm"],
    )
    assert (hidden.status, hidden.reason, hidden.message) == (missing.status, missing.reason, missing.message)
    assert hidden.reason == r.CLASS_NOT_FOUND


def test_the_namespace_cache_keeps_only_name_and_labels() -> None:
    raw = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": "support",
            "uid": "u",
            "resourceVersion": "9",
            "labels": {"gpu": "yes"},
            "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "x" * 4096},
            "managedFields": [{"manager": "kubectl"}],
        },
        "spec": {"finalizers": ["kubernetes"]},
        "status": {"phase": "Active"},
    }
    assert slim.namespace(raw) == {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": "support", "uid": "u", "resourceVersion": "9", "labels": {"gpu": "yes"}},
    }


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
        return []


def _snapshot_class(namespace: dict[str, Any], selector: Any) -> Any:
    readers: dict[Cache, Any] = {k.cache: _Reader([]) for k in KINDS}
    readers[Cache.CLASSES] = _Reader([{**klass(selector), "metadata": {"name": "default-llm"}}])
    readers[Cache.NAMESPACES] = _Reader([namespace])
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
    order = make_order(metadata={"namespace": namespace["metadata"]["name"]})
    with mock.patch.object(Observer, "_model", return_value=None):
        snap = observer.snapshot(order, {"metadata": {"resourceVersion": "1"}}, 0.0)
    return snap.klass


def test_observe_hands_decide_no_class_for_a_namespace_the_class_does_not_select() -> None:
    selector = {"matchLabels": {"gpu": "yes"}}
    assert _snapshot_class(SUPPORT, selector) is not None
    assert _snapshot_class(OTHER, selector) is None
    assert _snapshot_class(OTHER, None) is not None
