"""devtools/cluster/components/lws_config.py, LWS's pure parts: LWS's webhook configurations made local, and its manager configuration."""

from __future__ import annotations

import base64
import json
import pathlib
import re

import pytest

from devtools.cluster.components.lws import version as lws_version
from devtools.cluster.components.lws_config import (
    SET_NAME_LABEL,
    VERSION_ANNOTATION,
    installed_version,
    manager_config,
    webhook_configurations,
    webhook_paths,
)
from devtools.cluster.config import read_versions

# The shape of sigs.k8s.io/lws config/webhook/manifests.yaml (two of its five webhooks).
MANIFESTS = """
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata:
  name: mutating-webhook-configuration
webhooks:
- admissionReviewVersions: [v1]
  clientConfig:
    service: {name: webhook-service, namespace: system, path: /mutate-leaderworkerset-x-k8s-io-v1-leaderworkerset}
  failurePolicy: Fail
  name: mleaderworkerset.kb.io
  rules:
  - apiGroups: [leaderworkerset.x-k8s.io]
    apiVersions: [v1]
    operations: [CREATE, UPDATE]
    resources: [leaderworkersets]
  sideEffects: None
- admissionReviewVersions: [v1]
  clientConfig:
    service: {name: webhook-service, namespace: system, path: /mutate--v1-pod}
  failurePolicy: Fail
  name: mpod.kb.io
  rules:
  - apiGroups: [""]
    apiVersions: [v1]
    operations: [CREATE]
    resources: [pods]
  sideEffects: None
"""


def test_the_webhooks_call_the_local_url_with_our_ca_under_prefixed_names() -> None:
    (conf,) = webhook_configurations(MANIFESTS, base_url="https://127.0.0.1:9443/", ca_bundle=b"PEM")
    assert conf["metadata"]["name"] == "lws-mutating-webhook-configuration"
    urls = [h["clientConfig"]["url"] for h in conf["webhooks"]]
    assert urls == [
        "https://127.0.0.1:9443/mutate-leaderworkerset-x-k8s-io-v1-leaderworkerset",
        "https://127.0.0.1:9443/mutate--v1-pod",
    ]
    assert {base64.b64decode(h["clientConfig"]["caBundle"]) for h in conf["webhooks"]} == {b"PEM"}
    assert all(h["failurePolicy"] == "Fail" for h in conf["webhooks"])


def test_only_pods_of_a_leader_worker_set_go_to_the_pod_webhook() -> None:
    (conf,) = webhook_configurations(MANIFESTS, base_url="https://x", ca_bundle=b"", prefix="lws-e2e-")
    lws_hook, pod_hook = conf["webhooks"]
    assert "objectSelector" not in lws_hook
    assert pod_hook["objectSelector"] == {"matchExpressions": [{"key": SET_NAME_LABEL, "operator": "Exists"}]}
    assert conf["metadata"]["name"] == "lws-e2e-mutating-webhook-configuration"


def test_webhook_paths_are_the_paths_the_server_must_serve() -> None:
    confs = webhook_configurations(MANIFESTS, base_url="https://127.0.0.1:1", ca_bundle=b"")
    assert webhook_paths(confs) == ["mutate-leaderworkerset-x-k8s-io-v1-leaderworkerset", "mutate--v1-pod"]


def test_the_manager_runs_without_leader_election_internal_certificates_or_metrics() -> None:
    cfg = manager_config(webhook_port=1, health_port=2, cert_dir=pathlib.Path("/tmp/pki"))
    assert cfg["apiVersion"] == "config.lws.x-k8s.io/v1alpha1"
    assert cfg["leaderElection"] == {"leaderElect": False}
    assert cfg["internalCertManagement"] == {"enable": False}
    assert cfg["webhook"] == {"host": "127.0.0.1", "port": 1, "certDir": "/tmp/pki"}
    assert cfg["metrics"] == {"bindAddress": "0"}
    assert cfg["health"] == {"healthProbeBindAddress": "127.0.0.1:2"}


def test_the_version_is_the_exact_release_versions_env_pins_and_the_docs_name() -> None:
    root = pathlib.Path(__file__).resolve().parents[2]
    pinned = read_versions((root / "devtools/cluster/versions.env").read_text())["LWS_VERSION"]
    documented = re.search(
        r"\*\*Version: (\S+)\*\* \(`LWS_VERSION`", (root / "docs/local-control-plane.md").read_text()
    )
    assert documented is not None
    assert re.fullmatch(r"v\d+\.\d+\.\d+", pinned), "a release tag, never a branch or latest"
    assert lws_version() == pinned == documented.group(1)


def crd(name: str, version: str | None) -> dict[str, object]:
    annotations = {VERSION_ANNOTATION: version} if version else {}
    return {"kind": "CustomResourceDefinition", "metadata": {"name": name, "annotations": annotations}}


@pytest.mark.parametrize(
    ("out", "expected"),
    [
        pytest.param(
            {"kind": "List", "items": [crd("a", "v0.9.0"), crd("b", "v0.9.0")]}, "v0.9.0", id="both"
        ),
        pytest.param(
            {"kind": "List", "items": [crd("a", "v0.9.0"), crd("b", "v0.8.0")]}, None, id="disagree"
        ),
        pytest.param({"kind": "List", "items": [crd("a", None), crd("b", None)]}, None, id="not ours"),
        pytest.param(crd("a", "v0.9.0"), None, id="one missing"),
        pytest.param(None, None, id="none"),
    ],
)
def test_the_installed_version_is_read_from_our_annotation_on_both_crds(
    out: object, expected: str | None
) -> None:
    def kubectl(*args: str, input: str | None = None, check: bool = True) -> str:
        return json.dumps(out) if out is not None else ""

    assert installed_version(kubectl) == expected
