"""Writes through ``controller.kube.apply`` against the real API server: server-side apply is a no-op
the second time, ``/status`` patches are conditional on the resourceVersion, errors are typed, and
Events land where ``kubectl describe`` shows them."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest

from controller.kube import apply as kapi
from controller.kube.client import load_api_client, resource_for
from devtools.cluster.handle import Cluster

pytestmark = pytest.mark.cluster

Obj = dict[str, Any]
MANAGER = "inference-controller-test"
ORDER = resource_for("ai.deckhouse.io/v1alpha1", "InferenceService")


def make_configmap(namespace: str, name: str = "settings", **data: str) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": "test"}},
        "data": data or {"a": "1"},
    }


def make_order(namespace: str, name: str = "chat") -> Obj:
    return {
        "apiVersion": ORDER.api_version,
        "kind": ORDER.kind,
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "inferenceServiceClassName": "default-llm",
            "model": {"src": "HuggingFace", "ref": {"name": "Qwen/Qwen2.5-7B-Instruct"}},
        },
    }


def rv(obj: Obj) -> str:
    return str(obj["metadata"]["resourceVersion"])


def test_applying_the_same_object_twice_does_not_write(api: Any, namespace: str) -> None:
    first = kapi.apply(api, make_configmap(namespace), field_manager=MANAGER)
    second = kapi.apply(api, make_configmap(namespace), field_manager=MANAGER)
    assert rv(second) == rv(first)
    assert [m["manager"] for m in second["metadata"]["managedFields"]] == [MANAGER]


def test_applying_a_change_writes_it_and_drops_fields_no_longer_applied(api: Any, namespace: str) -> None:
    first = kapi.apply(api, make_configmap(namespace, a="1", b="2"), field_manager=MANAGER)
    second = kapi.apply(api, make_configmap(namespace, a="3"), field_manager=MANAGER)
    assert rv(second) != rv(first)
    assert second["data"] == {"a": "3"}


def test_a_dry_run_apply_stores_nothing(api: Any, namespace: str) -> None:
    out = kapi.apply(api, make_configmap(namespace, name="dry"), field_manager=MANAGER, dry_run=True)
    assert out["data"] == {"a": "1"}
    assert kapi.get(api, "v1", "ConfigMap", namespace=namespace, name="dry") is None


def test_apply_takes_over_fields_of_another_manager_when_forced(api: Any, namespace: str) -> None:
    kapi.apply(api, make_configmap(namespace, a="theirs"), field_manager="someone-else")
    with pytest.raises(kapi.Conflict, match="conflict"):
        kapi.apply(api, make_configmap(namespace, a="ours"), field_manager=MANAGER, force=False)
    out = kapi.apply(api, make_configmap(namespace, a="ours"), field_manager=MANAGER)
    assert out["data"] == {"a": "ours"}


def test_get_create_and_delete_report_absence_and_duplicates(api: Any, namespace: str) -> None:
    assert kapi.get(api, "v1", "ConfigMap", namespace=namespace, name="x") is None
    created = kapi.create(api, make_configmap(namespace, name="x"))
    assert kapi.get(api, "v1", "ConfigMap", namespace=namespace, name="x") == created
    with pytest.raises(kapi.AlreadyExists):
        kapi.create(api, make_configmap(namespace, name="x"))
    assert kapi.delete(api, "v1", "ConfigMap", namespace=namespace, name="x") is True
    assert kapi.delete(api, "v1", "ConfigMap", namespace=namespace, name="x") is False


def test_list_objects_reads_every_page_and_filters_by_label(api: Any, namespace: str) -> None:
    for i in range(7):
        kapi.create(api, make_configmap(namespace, name=f"cm-{i}"))
    kapi.create(
        api,
        {**make_configmap(namespace, name="other"), "metadata": {"name": "other", "namespace": namespace}},
    )
    got = kapi.list_objects(api, "v1", "ConfigMap", namespace=namespace, label_selector="app=test")
    assert sorted(o["metadata"]["name"] for o in got) == [f"cm-{i}" for i in range(7)]


def test_an_invalid_object_raises_invalid_with_the_servers_message(api: Any, namespace: str) -> None:
    with pytest.raises(kapi.Invalid, match="Bad_Name"):
        kapi.create(api, make_configmap(namespace, name="Bad_Name"))


def test_an_unreachable_server_raises_api_unavailable(cluster: Cluster, namespace: str) -> None:
    dead = load_api_client(kubeconfig=str(cluster.kubeconfig))
    dead.configuration.host = "https://127.0.0.1:1"  # nothing listens on port 1
    with pytest.raises(kapi.ApiUnavailable):
        kapi.get(dead, "v1", "ConfigMap", namespace=namespace, name="x")


def test_a_status_patch_with_a_stale_resource_version_raises_conflict(
    api: Any, namespace: str, crds: None
) -> None:
    order = kapi.create(api, make_order(namespace))
    stale = rv(order)
    kapi.patch_status(
        api, ORDER, namespace=namespace, name="chat", status={"phase": "Pending"}, resource_version=stale
    )
    with pytest.raises(kapi.Conflict):
        kapi.patch_status(
            api, ORDER, namespace=namespace, name="chat", status={"phase": "Ready"}, resource_version=stale
        )
    live = kapi.get(api, ORDER, namespace=namespace, name="chat")
    assert live is not None
    assert live["status"] == {"phase": "Pending"}


def test_a_status_patch_keeps_fields_it_does_not_name_and_removes_those_set_to_none(
    api: Any, namespace: str, crds: None
) -> None:
    kapi.create(api, make_order(namespace))
    other_writer = {"phase": "Pending", "authSecretName": "chat-auth", "observedGeneration": 1}
    kapi.patch_status(
        api, ORDER, namespace=namespace, name="chat", status=other_writer, resource_version=None
    )
    out = kapi.patch_status(
        api,
        "ai.deckhouse.io/v1alpha1",
        "InferenceService",
        namespace=namespace,
        name="chat",
        status={"phase": "Failed", "observedGeneration": None},
        resource_version=None,
    )
    assert out["status"] == {"phase": "Failed", "authSecretName": "chat-auth"}


def test_a_status_patch_does_not_touch_the_spec(api: Any, namespace: str, crds: None) -> None:
    kapi.create(api, make_order(namespace))
    out = kapi.patch_status(api, ORDER, namespace=namespace, name="chat", status={"phase": "Ready"},
                            resource_version=None)  # fmt: skip
    assert out["spec"] == make_order(namespace)["spec"]
    assert out["metadata"]["generation"] == 1


def test_an_event_shows_in_kubectl_describe(
    api: Any, namespace: str, kubectl: Callable[..., Any], wait_for: Callable[..., Any]
) -> None:
    cm = kapi.create(api, make_configmap(namespace, name="described"))
    cm.update(apiVersion="v1", kind="ConfigMap")
    note = f"The model resolved to commit {uuid.uuid4().hex[:12]}."
    kapi.create_event(api, cm, type_="Warning", reason="ModelResolved", message=note,
                      reporting_controller="inference-controller", action="Reconcile")  # fmt: skip
    out = wait_for(
        lambda: kubectl("describe", "configmap", "described", "-n", namespace).stdout,
        lambda text: note in text,
        message="the event in kubectl describe",
    )
    line = next(x for x in out.splitlines() if note in x)
    assert line.split()[:2] == ["Warning", "ModelResolved"]


def test_an_event_must_be_normal_or_warning(api: Any, namespace: str) -> None:
    with pytest.raises(ValueError, match="Normal or Warning"):
        kapi.create_event(api, make_configmap(namespace), type_="Info", reason="X", message="m",
                          reporting_controller="c", action="a")  # fmt: skip
