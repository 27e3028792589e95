"""Every write request the controller's client sends is reported once, with its kind and verb,
whoever sends it: the workload apply, the status patch, the token Secret, the model-facts ConfigMap,
an Event, the Lease. The fake is the HTTP pool, below ``controller.kube.client``; everything above
it (``controller.kube.apply``, ``controller.modelhub.store``) is the production code."""

from __future__ import annotations

import json
from typing import Any

import pytest

from controller.kube import apply as kapi
from controller.kube import errors
from controller.kube.client import on_write, request, write_label
from controller.modelhub.store import NAME, ConfigMapFactsStore
from testkit.planner import LLAMA_8B


class _Answer:
    def __init__(self, status: int, body: dict[str, Any]) -> None:
        self.status = status
        self._raw = json.dumps(body).encode()

    def read(self) -> bytes:
        return self._raw

    def release_conn(self) -> None:
        pass


class _Pool:
    """Answers each request with the next (status, body); records (method, url)."""

    def __init__(self, answers: list[tuple[int, dict[str, Any]]]) -> None:
        self.answers = answers
        self.sent: list[tuple[str, str]] = []

    def request(self, method: str, url: str, **_: Any) -> _Answer:
        self.sent.append((method, url))
        status, body = self.answers.pop(0) if self.answers else (200, {})
        return _Answer(status, body)


class _Config:
    host = "https://api.test"

    def auth_settings(self) -> dict[str, Any]:
        return {}


class _Rest:
    def __init__(self, pool: _Pool) -> None:
        self.pool_manager = pool


class FakeApi:
    def __init__(self, *answers: tuple[int, dict[str, Any]]) -> None:
        self.configuration = _Config()
        self.pool = _Pool(list(answers))
        self.rest_client = _Rest(self.pool)
        self.writes: list[tuple[str, str]] = []
        on_write(self, lambda kind, verb: self.writes.append((kind, verb)))


def configmap(name: str = "x") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "ns"}}


@pytest.mark.parametrize(
    ("method", "path", "content_type", "label"),
    [
        ("PATCH", "/apis/apps/v1/namespaces/t/deployments/d", "application/apply-patch+yaml", ("Deployment", "apply")),
        ("PATCH", "/api/v1/namespaces/d8/configmaps/inference-model-facts", "application/merge-patch+json", ("ConfigMap", "patch")),
        ("POST", "/api/v1/namespaces/d8/configmaps", None, ("ConfigMap", "create")),
        ("POST", "/apis/events.k8s.io/v1/namespaces/t/events", None, ("Event", "create")),
        ("PATCH", "/apis/ai.deckhouse.io/v1alpha1/namespaces/t/inferenceservices/o/status", "application/merge-patch+json", ("InferenceService", "status")),
        ("PATCH", "/apis/ai.deckhouse.io/v1alpha1/inferenceserviceclasses/c/status", "application/merge-patch+json", ("InferenceServiceClass", "status")),
        ("PUT", "/apis/coordination.k8s.io/v1/namespaces/d8/leases/l", None, ("Lease", "update")),
        ("DELETE", "/apis/autoscaling/v2/namespaces/t/horizontalpodautoscalers/h", None, ("HorizontalPodAutoscaler", "delete")),
        ("POST", "/apis/example.com/v1/namespaces/t/widgets", None, ("widgets", "create")),
    ],
)  # fmt: skip
def test_a_write_is_labelled_by_the_kind_its_path_names_and_its_verb(
    method: str, path: str, content_type: str | None, label: tuple[str, str]
) -> None:
    assert write_label(method, path, content_type) == label


def test_reads_are_not_writes() -> None:
    api = FakeApi((200, {"items": []}), (200, {}))
    kapi.list_objects(api, "v1", "ConfigMap", namespace="ns")
    kapi.get(api, "v1", "ConfigMap", namespace="ns", name="x")
    assert len(api.pool.sent) == 2
    assert api.writes == []


def test_every_write_helper_reports_its_write_refused_ones_included() -> None:
    api = FakeApi((200, {}), (201, {}), (200, {}), (200, {}), (409, {"reason": "Conflict"}))
    kapi.apply(api, configmap(), field_manager="m")
    kapi.create_event(
        api,
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "ns", "uid": "u"}},
        type_="Normal",
        reason="R",
        message="m",
        reporting_controller="c",
        action="Reconcile",
    )
    kapi.delete(api, "v1", "ConfigMap", namespace="ns", name="x")
    kapi.merge_patch(api, "v1", "Secret", namespace="ns", name="s", body={"data": {}})
    with pytest.raises(errors.Conflict):
        request(api, "PUT", "/apis/coordination.k8s.io/v1/namespaces/ns/leases/l", body={})
    assert api.writes == [
        ("ConfigMap", "apply"),
        ("Event", "create"),
        ("ConfigMap", "delete"),
        ("Secret", "patch"),
        ("Lease", "update"),
    ]


def test_a_client_without_a_hook_counts_nothing_and_works() -> None:
    api = FakeApi((200, {}))
    on_write(api, None)
    kapi.apply(api, configmap(), field_manager="m")
    assert api.writes == []
    assert len(api.pool.sent) == 1


def test_the_model_facts_configmap_writes_are_counted() -> None:
    """The store reads its ConfigMap once (a read, not counted), patches it, and when it is absent
    (404) creates it: two writes counted."""
    api = FakeApi((404, {"reason": "NotFound"}), (404, {"reason": "NotFound"}), (201, {}))
    store = ConfigMapFactsStore(api, "d8")
    store.put("org/model", "abc", LLAMA_8B)
    assert [m for m, _ in api.pool.sent] == ["GET", "PATCH", "POST"]
    assert api.pool.sent[1][1].endswith(f"/configmaps/{NAME}")
    assert api.writes == [("ConfigMap", "patch"), ("ConfigMap", "create")]


def test_the_assembled_controller_counts_its_facts_and_event_writes_on_its_metrics() -> None:
    """The controller as ``python -m controller`` builds it: the writes of its facts store and of its
    Event sender reach the registry it serves on /metrics (the HTTP pool is the only fake)."""
    from prometheus_client import generate_latest

    from controller.__main__ import parse_args
    from controller.config.settings import parse_settings
    from controller.manager import Controller

    # the store's one read (404), its patch (404), its create, the Event
    api = FakeApi((404, {"reason": "NotFound"}), (404, {"reason": "NotFound"}), (201, {}), (201, {}))
    on_write(api, None)  # the controller sets its own hook
    ctl = Controller(parse_args(["--no-leader-elect"]), api, parse_settings({}, {}))
    try:
        store = ctl.hub._store
        assert store is not None
        store.put("org/model", "abc", LLAMA_8B)  # what a resolution does with new facts
        order: dict[str, Any] = {"apiVersion": "ai.deckhouse.io/v1alpha1", "kind": "InferenceService"}
        order["metadata"] = {"name": "o", "namespace": "team", "uid": "u", "resourceVersion": "1"}
        ctl.reconciler.actor.send_event(order, "Normal", "Planned", "planned")
    finally:
        ctl.stop()
    page = generate_latest(ctl.registry).decode()
    samples = sorted(
        line for line in page.splitlines() if line.startswith("inference_controller_api_writes_total{")
    )
    assert samples == [
        'inference_controller_api_writes_total{kind="ConfigMap",verb="create"} 1.0',
        'inference_controller_api_writes_total{kind="ConfigMap",verb="patch"} 1.0',
        'inference_controller_api_writes_total{kind="Event",verb="create"} 1.0',
    ]
