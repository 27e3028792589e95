"""The controller's Secret writes, narrowed by a ValidatingAdmissionPolicy where RBAC cannot narrow
them (deploy/base/rbac/controller-secrets-policy.yaml; issue 21, item 9), on the real API server:
as the controller's ServiceAccount (impersonated), only ``<order>-auth`` and ``<order>-tls`` of an
order named in their ownerReferences can be written, and the data of ``<order>-tls`` never changes.
"""

from __future__ import annotations

import json
import pathlib
from typing import Any

import pytest

from devtools.cluster.handle import Kubectl
from tests.integration.conftest import wait_for

pytestmark = pytest.mark.cluster

ROOT = pathlib.Path(__file__).resolve().parents[2]
CONTROLLER = "system:serviceaccount:d8-inference:inference-controller"


@pytest.fixture(scope="module")
def policy(kubectl: Kubectl, crds: None) -> None:
    kubectl("create", "namespace", "d8-inference", check=False)
    kubectl("apply", "--server-side", "--force-conflicts", "--field-manager=test-secrets", "-k",
            str(ROOT / "deploy/base/rbac"))  # fmt: skip


def order_uid(kubectl: Kubectl, ns: str, name: str) -> str:
    """A real order (the garbage collector deletes a Secret whose owner does not exist)."""
    order = {
        "apiVersion": "ai.deckhouse.io/v1alpha1",
        "kind": "InferenceService",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"inferenceServiceClassName": "c", "model": {"src": "HuggingFace", "ref": {"name": "o/m"}}},
    }
    kubectl("apply", "--server-side", "--field-manager=test-secrets", "-f", "-", input=json.dumps(order))
    got = json.loads(kubectl("get", "inferenceservice", name, "-n", ns, "-o", "json").stdout)
    return str(got["metadata"]["uid"])


def secret(ns: str, name: str, owner: tuple[str, str] | None, data: str = "eA==") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": ns}
    if owner is not None:
        meta["ownerReferences"] = [
            {"apiVersion": "ai.deckhouse.io/v1alpha1", "kind": "InferenceService", "name": owner[0],
             "uid": owner[1], "controller": True}
        ]  # fmt: skip
    return {"apiVersion": "v1", "kind": "Secret", "metadata": meta, "data": {"token": data}}


def as_controller(kubectl: Kubectl, *args: str, input: str | None = None) -> tuple[bool, str]:
    res = kubectl(f"--as={CONTROLLER}", *args, input=input, check=False)
    return res.returncode == 0, res.stderr


def test_the_controller_writes_only_the_secrets_of_an_order(
    kubectl: Kubectl, namespace: str, policy: None
) -> None:
    def create(obj: dict[str, Any]) -> tuple[bool, str]:
        return as_controller(kubectl, "create", "-f", "-", input=json.dumps(obj))

    # the policy takes a moment to be enforced: wait until a refused write is refused
    wait_for(
        lambda: create(secret(namespace, "probe", None)),
        lambda r: not r[0] and "inference controller writes only" in r[1],
        timeout=30,
        message="the policy to refuse a Secret the controller may not write",
    )
    web = ("web", order_uid(kubectl, namespace, "web"))
    ok, err = create(secret(namespace, "web-auth", web))
    assert ok, err
    ok, err = create(secret(namespace, "web-tls", web))
    assert ok, err
    refused, err = create(secret(namespace, "other-auth", web))
    assert not refused and "inference controller writes only" in err
    refused, err = create(secret(namespace, "web-auth-copy", None))
    assert not refused
    # the auth token may change (a stale Secret of an earlier order is taken over)
    ok, err = as_controller(kubectl, "patch", "secret", "web-auth", "-n", namespace, "--type=merge",
                            "-p", json.dumps({"data": {"token": "eQ=="}}))  # fmt: skip
    assert ok, err
    # cert-manager's data in <order>-tls never changes; adopting it (metadata) does
    refused, err = as_controller(kubectl, "patch", "secret", "web-tls", "-n", namespace, "--type=merge",
                                 "-p", json.dumps({"data": {"token": "eQ=="}}))  # fmt: skip
    assert not refused and "never changes the data" in err
    ok, err = as_controller(kubectl, "patch", "secret", "web-tls", "-n", namespace, "--type=merge",
                            "-p", json.dumps({"metadata": {"labels": {"a": "b"}}}))  # fmt: skip
    assert ok, err
    # anyone else is not concerned by the policy
    res = kubectl("create", "-f", "-", input=json.dumps(secret(namespace, "mine", None)), check=False)
    assert res.returncode == 0, res.stderr
