"""The facts ConfigMap is bounded: least recently used keys are removed in the same merge patch, and
facts too heavy for it are not kept (controller.modelhub.store)."""

from __future__ import annotations

from typing import Any

import pytest

from controller.kube import apply as kapi
from controller.kube import errors as kerr
from controller.model_facts.facts import ModelFacts
from controller.modelhub import store as factstore
from controller.modelhub.store import ConfigMapFactsStore, key_of


class FakeConfigMap:
    """The one ConfigMap, with JSON merge-patch semantics (a null removes a key)."""

    def __init__(self) -> None:
        self.data: dict[str, str] | None = None
        self.patches: list[dict[str, Any]] = []

    def get(self, *_: Any, **__: Any) -> dict[str, Any] | None:
        return None if self.data is None else {"data": dict(self.data)}

    def create(self, _api: Any, obj: dict[str, Any], **_: Any) -> None:
        self.data = dict(obj["data"])

    def request(self, _api: Any, method: str, path: str, *, body: Any, content_type: str) -> dict[str, Any]:
        assert method == "PATCH" and content_type == "application/merge-patch+json"
        if self.data is None:
            raise kerr.NotFound("not found", status=404)
        self.patches.append(body)
        for key, value in body["data"].items():
            if value is None:
                self.data.pop(key, None)
            else:
                self.data[key] = value
        return {}


@pytest.fixture
def cm(monkeypatch: pytest.MonkeyPatch) -> FakeConfigMap:
    fake = FakeConfigMap()
    monkeypatch.setattr(kapi, "get", fake.get)
    monkeypatch.setattr(kapi, "create", fake.create)
    monkeypatch.setattr(factstore, "request", fake.request)
    return fake


def facts(name: str, files: int = 0) -> ModelFacts:
    return ModelFacts(
        source="HuggingFace",
        name=name,
        revision="a" * 40,
        parameter_count=1000,
        files={f"file-{i:06d}.json": 100 for i in range(files)},
    )


def test_the_store_evicts_the_least_recently_used_keys_past_its_bound(cm: FakeConfigMap) -> None:
    size = len(facts("org/m0").model_dump_json())
    store = ConfigMapFactsStore(None, "ns", max_bytes=3 * size + 10)
    for i in range(3):
        store.put(f"org/m{i}", "a" * 40, facts(f"org/m{i}"))
    assert store.get("org/m0", "a" * 40) is not None  # m0 is used: m1 is now the least recently used
    store.put("org/m3", "a" * 40, facts("org/m3"))
    assert cm.data is not None
    assert set(cm.data) == {key_of(f"org/m{i}", "a" * 40) for i in (0, 2, 3)}
    assert cm.patches[-1]["data"][key_of("org/m1", "a" * 40)] is None  # removed in the same patch
    assert store.get("org/m1", "a" * 40) is None


def test_the_default_bound_keeps_the_configmap_under_the_object_limit(cm: FakeConfigMap) -> None:
    store = ConfigMapFactsStore(None, "ns")
    for i in range(500):
        store.put(f"org/model-{i}", "a" * 40, facts(f"org/model-{i}", files=40))
    assert cm.data is not None
    assert sum(len(v) for v in cm.data.values()) <= factstore.MAX_BYTES < 1024 * 1024


def test_facts_too_heavy_for_the_store_are_not_kept(cm: FakeConfigMap) -> None:
    store = ConfigMapFactsStore(None, "ns")
    store.put("org/small", "a" * 40, facts("org/small"))
    store.put("org/huge", "a" * 40, facts("org/huge", files=10_000))
    assert cm.data is not None and list(cm.data) == [key_of("org/small", "a" * 40)]


def test_facts_stored_before_max_seq_length_are_resolved_again(
    cm: FakeConfigMap, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Format 5 added max_seq_length: a key written by format 4 (without it) is never read back, so an
    all-MiniLM order resolved before the upgrade is resolved again and rendered with 256, not 512."""
    assert factstore.FORMAT == 5
    monkeypatch.setattr(factstore, "FORMAT", 4)
    ConfigMapFactsStore(None, "ns").put("org/st", "a" * 40, facts("org/st"))
    monkeypatch.setattr(factstore, "FORMAT", 5)
    assert cm.data is not None and len(cm.data) == 1
    assert ConfigMapFactsStore(None, "ns").get("org/st", "a" * 40) is None
