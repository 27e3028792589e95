"""deploy/base's PKI issued for real: cert-manager (controller + cainjector, built from the cert-manager Go
module by devtools/cluster/components/cert_manager.py) runs against the local control plane while the test applies
deploy/base/cert-manager.

Checks: the webhook's serving certificate is issued into Secret inference-webhook-tls for the Service's
DNS names by the CA chain; the endpoints' ClusterIssuer is Ready; the controller's copy of the platform
CA (d8-inference/inference-platform-ca, ca.crt) is the CA in cert-manager/inference-platform-ca; and the
cainjector fills the caBundle of webhook configurations carrying
``cert-manager.io/inject-ca-from: d8-inference/inference-webhook``. The configurations registered here are
copies of deploy/webhook's under other names whose rules match nothing, so no write of any other test
waits on a webhook that does not exist.
"""

from __future__ import annotations

import base64
import copy
import functools
import json
import pathlib
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from cryptography import x509

from devtools.cluster.components import approver_policy
from devtools.cluster.handle import Cluster, Kubectl
from tests.integration.cert_manager_fixture import running_cert_manager
from tests.integration.conftest import wait_for

pytestmark = pytest.mark.cluster

ROOT = pathlib.Path(__file__).resolve().parents[2]
PKI = ROOT / "deploy" / "base" / "cert-manager"


@pytest.fixture(scope="module")
def cert_manager(
    cluster: Cluster, kubectl: Kubectl, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[None]:
    """cert-manager's CRDs installed, its controller and cainjector running for the module's tests."""
    with running_cert_manager(cluster, kubectl, tmp_path_factory.mktemp("cert-manager")):
        yield


@pytest.fixture(scope="module")
def issued(cert_manager: None, kubectl: Kubectl) -> Iterator[None]:
    """deploy/base/cert-manager applied for real, every Certificate Ready; deleted afterwards. Its
    CertificateRequestPolicies need approver-policy's CRD; cert-manager's own approver decides here
    (tests/integration/test_certificate_policy.py runs approver-policy)."""
    approver_policy.install_crds(kubectl, field_manager="test-cert-manager")
    kubectl(
        "apply", "--server-side", "--force-conflicts", "--field-manager=test-cert-manager", "-k", str(PKI)
    )
    for ns, name in (
        ("d8-inference", "inference-ca"),
        ("d8-inference", "inference-webhook"),
        ("cert-manager", "inference-platform-ca"),
        ("d8-inference", "inference-platform-ca"),
    ):
        wait_for(functools.partial(ready, kubectl, "certificate", name, ns), bool, timeout=120,
                 message=f"Certificate {ns}/{name} to be Ready")  # fmt: skip
    yield
    kubectl("delete", "-k", str(PKI), "--ignore-not-found", "--wait=false")


def ready(kubectl: Kubectl, kind: str, name: str, namespace: str | None) -> bool:
    where = ["-n", namespace] if namespace else []
    res = kubectl("get", kind, name, *where, "-o", "json", check=False)
    if res.returncode != 0:
        return False
    conditions = json.loads(res.stdout).get("status", {}).get("conditions") or []
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)


def secret_pem(kubectl: Kubectl, namespace: str, name: str, key: str) -> bytes:
    data: dict[str, str] = json.loads(kubectl("get", "secret", name, "-n", namespace, "-o", "json").stdout)[
        "data"
    ]
    return base64.b64decode(data[key])


def test_the_webhook_certificate_is_issued_for_the_service_by_the_ca_chain(
    issued: None, kubectl: Kubectl
) -> None:
    leaf = x509.load_pem_x509_certificate(
        secret_pem(kubectl, "d8-inference", "inference-webhook-tls", "tls.crt")
    )
    ca = x509.load_pem_x509_certificate(
        secret_pem(kubectl, "d8-inference", "inference-webhook-tls", "ca.crt")
    )
    names = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value.get_values_for_type(
        x509.DNSName
    )
    assert "inference-webhook.d8-inference.svc" in names
    leaf.verify_directly_issued_by(ca)
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is True


def test_the_endpoints_issuer_is_ready_and_the_controller_gets_its_ca(issued: None, kubectl: Kubectl) -> None:
    assert ready(kubectl, "clusterissuer", "inference-endpoints", None)
    platform_ca = secret_pem(kubectl, "cert-manager", "inference-platform-ca", "tls.crt")
    carried = secret_pem(kubectl, "d8-inference", "inference-platform-ca", "ca.crt")
    assert x509.load_pem_x509_certificate(carried) == x509.load_pem_x509_certificate(platform_ca)


def inert_copies(docs: list[dict[str, Any]], suffix: str) -> list[dict[str, Any]]:
    """deploy/webhook's configurations under other names, with rules no request can match."""
    out = []
    for doc in docs:
        conf = copy.deepcopy(doc)
        conf["metadata"]["name"] = f"{conf['metadata']['name']}-inject-test-{suffix}"
        for hook in conf["webhooks"]:
            hook["rules"] = [{"apiGroups": ["inject-test.invalid"], "apiVersions": ["v1"],
                              "operations": ["CREATE"], "resources": ["nothings"]}]  # fmt: skip
        out.append(conf)
    return out


def test_the_cainjector_fills_the_ca_bundle_of_the_webhook_configurations(
    issued: None, kubectl: Kubectl
) -> None:
    docs = [d for d in yaml.safe_load_all((ROOT / "deploy" / "webhook" / "webhooks.yaml").read_text()) if d]
    confs = inert_copies(docs, uuid.uuid4().hex[:6])
    assert all(
        c["metadata"]["annotations"]["cert-manager.io/inject-ca-from"] == "d8-inference/inference-webhook"
        for c in confs
    )
    kubectl("apply", "-f", "-", input=yaml.safe_dump_all(confs))
    try:
        ca = secret_pem(kubectl, "d8-inference", "inference-webhook-tls", "ca.crt")
        for conf in confs:
            kind, name = conf["kind"].lower(), conf["metadata"]["name"]

            def bundles(kind: str = kind, name: str = name) -> list[str]:
                live = json.loads(kubectl("get", kind, name, "-o", "json").stdout)
                return [h.get("clientConfig", {}).get("caBundle", "") for h in live["webhooks"]]

            got = wait_for(bundles, lambda b: all(b), timeout=60, message=f"caBundle injected into {name}")
            assert {base64.b64decode(b) for b in got} == {ca}
    finally:
        for conf in confs:
            kubectl("delete", conf["kind"].lower(), conf["metadata"]["name"], "--ignore-not-found")
