"""The platform CA under approver-policy, for real: cert-manager's controller (its own approver off, run as
the ServiceAccount cert-manager/cert-manager with no right on policies of its own) and approver-policy
(hack/approver_policy.py, built from its Go module) run against the local plane while the test applies
deploy/base/cert-manager, the module's PKI with its CertificateRequestPolicies and their RBAC.

Checks: the module's own certificates are issued, approved by ``inference-module-pki``; an order's
Certificate, rendered by the controller itself, is issued for its names (cluster and external); a
tenant's Certificate for another namespace's name, a wildcard, a CA, a common name or a client usage is
denied (``Denied=True`` on its CertificateRequest) and nothing is issued; a CA from the self-signed
ClusterIssuer, and a CertificateRequest a tenant writes itself, are never approved; only cert-manager's
ServiceAccount may use the policies.

Skipped only when approver-policy cannot be built here (no ``go``, no module proxy).
"""

from __future__ import annotations

import base64
import functools
import json
import pathlib
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec

from controller.config.settings import Settings
from controller.render.exposure import endpoint_for
from controller.render.network import certificate
from devtools.cluster.components import approver_policy
from devtools.cluster.handle import Cluster, Kubectl
from devtools.cluster.identity import service_account_kubeconfig
from tests.integration.cert_manager_fixture import running_cert_manager
from tests.integration.conftest import wait_for
from tests.unit.controller.builders import make_class, make_order

pytestmark = pytest.mark.cluster

ROOT = pathlib.Path(__file__).resolve().parents[2]
PKI = ROOT / "deploy" / "base" / "cert-manager"
MODULE_CERTIFICATES = (
    ("d8-inference", "inference-ca"),
    ("d8-inference", "inference-webhook"),
    ("cert-manager", "inference-platform-ca"),
    ("d8-inference", "inference-platform-ca"),
)
Obj = dict[str, Any]

# What the local cert-manager controller may do as its ServiceAccount: its own kinds, Secrets and
# Events; nothing on policy.cert-manager.io, so only deploy/'s binding lets its requests use a policy.
CERT_MANAGER_RBAC = f"""
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {{name: local-cert-manager-controller}}
rules:
  - {{apiGroups: [cert-manager.io, acme.cert-manager.io], resources: ["*"], verbs: ["*"]}}
  - {{apiGroups: [""], resources: [secrets, events, configmaps], verbs: ["*"]}}
  - {{apiGroups: [""], resources: [namespaces], verbs: [get, list, watch]}}
  - {{apiGroups: [events.k8s.io], resources: [events], verbs: ["*"]}}
  - {{apiGroups: [coordination.k8s.io], resources: [leases], verbs: ["*"]}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {{name: local-cert-manager-controller}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: local-cert-manager-controller}}
subjects: [{{kind: ServiceAccount, name: cert-manager, namespace: {approver_policy.NAMESPACE}}}]
"""


@pytest.fixture(scope="module")
def policed(
    cluster: Cluster, kubectl: Kubectl, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[pathlib.Path]:
    """cert-manager without its approver, approver-policy, and deploy/base/cert-manager applied with its
    module certificates Ready; yields the state directory (the processes' logs). Torn down afterwards."""
    try:
        approver_policy.build()
        approver_policy.crds_dir()
    except approver_policy.ApproverPolicyError as e:
        pytest.skip(f"approver-policy cannot be built here: {e}")
    state = tmp_path_factory.mktemp("certificate-policy")
    kubectl("create", "namespace", approver_policy.NAMESPACE, check=False)
    kubectl("create", "serviceaccount", "cert-manager", "-n", approver_policy.NAMESPACE, check=False)
    kubectl("apply", "-f", "-", input=CERT_MANAGER_RBAC)
    as_cert_manager = service_account_kubeconfig(
        kubectl=cluster.kubectl_path,
        admin_kubeconfig=cluster.kubeconfig,
        namespace=approver_policy.NAMESPACE,
        name="cert-manager",
        out=state / "cert-manager.kubeconfig",
    )
    with (
        running_cert_manager(
            cluster,
            kubectl,
            state,
            binaries=("controller",),
            kubeconfig=as_cert_manager,
            controller_args=[approver_policy.CERT_MANAGER_CONTROLLERS],
        ),  # fmt: skip
        approver_policy.running(kubectl=kubectl, kubeconfig=cluster.kubeconfig, state=state),
    ):
        # Secrets left by an earlier issuance (deleting a Certificate keeps its Secret) would make the
        # Certificates Ready with no request: these must be issued now, under the policies.
        # So would Certificates and requests left by a platform that issued them with cert-manager's own
        # approver on (the e2e modules apply the same PKI): they are deleted and made again here.
        kubectl("delete", "-k", str(PKI), "--ignore-not-found", "--wait=true")
        for ns in sorted({ns for ns, _ in MODULE_CERTIFICATES}):
            kubectl("delete", "certificaterequests.cert-manager.io", "--all", "-n", ns, "--ignore-not-found")
        for ns, name in MODULE_CERTIFICATES:
            secret = "inference-webhook-tls" if name == "inference-webhook" else name
            kubectl("delete", "secret", secret, "-n", ns, "--ignore-not-found")
        kubectl("apply", "--server-side", "--force-conflicts", "--field-manager=test-policy", "-k", str(PKI))
        try:
            for ns, name in MODULE_CERTIFICATES:
                wait_for(functools.partial(certificate_ready, kubectl, ns, name), bool, timeout=120,
                         message=f"Certificate {ns}/{name} to be Ready")  # fmt: skip
            yield state
        finally:
            kubectl("delete", "-k", str(PKI), "--ignore-not-found", "--wait=false")
            kubectl("delete", "-f", "-", "--ignore-not-found", input=CERT_MANAGER_RBAC)


def conditions(obj: Obj) -> dict[str, Obj]:
    return {c["type"]: c for c in (obj.get("status") or {}).get("conditions") or []}


def certificate_ready(kubectl: Kubectl, namespace: str, name: str) -> bool:
    res = kubectl("get", "certificate", name, "-n", namespace, "-o", "json", check=False)
    return res.returncode == 0 and conditions(json.loads(res.stdout)).get("Ready", {}).get("status") == "True"


def requests_for(kubectl: Kubectl, namespace: str, name: str) -> list[Obj]:
    """The CertificateRequests cert-manager made for Certificate ``name``."""
    items: list[Obj] = json.loads(
        kubectl("get", "certificaterequests", "-n", namespace, "-o", "json").stdout
    )["items"]
    return [
        cr
        for cr in items
        if (cr["metadata"].get("annotations") or {}).get("cert-manager.io/certificate-name") == name
    ]


def decision(kubectl: Kubectl, namespace: str, name: str) -> Obj | None:
    """The Approved or Denied condition of the Certificate's request, once there is one."""
    for cr in requests_for(kubectl, namespace, name):
        conds = conditions(cr)
        for kind in ("Approved", "Denied"):
            if conds.get(kind, {}).get("status") == "True":
                return {**conds[kind], "username": cr["spec"].get("username")}
    return None


def wait_decision(kubectl: Kubectl, namespace: str, name: str) -> Obj:
    got = wait_for(functools.partial(decision, kubectl, namespace, name), lambda d: d is not None,
                   timeout=60, message=f"a decision on {namespace}/{name}'s request")  # fmt: skip
    assert got is not None
    return got


def apply(kubectl: Kubectl, obj: Obj) -> None:
    kubectl("apply", "-f", "-", input=yaml.safe_dump(obj))


def tenant_certificate(namespace: str, name: str, **spec: Any) -> Obj:
    """A Certificate as a tenant may write it, from the endpoints' issuer unless told."""
    return {
        "apiVersion": "cert-manager.io/v1",
        "kind": "Certificate",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "secretName": f"{name}-tls",
            "issuerRef": {"group": "cert-manager.io", "kind": "ClusterIssuer", "name": "inference-endpoints"},
            "privateKey": {"algorithm": "ECDSA", "size": 256},
            **spec,
        },
    }


def test_the_module_certificates_are_approved_by_the_module_policy_with_cert_managers_approver_off(
    policed: pathlib.Path, kubectl: Kubectl
) -> None:
    running = [
        line for line in (policed / "controller.log").read_text().splitlines() if "(local) running" in line
    ]
    assert running and "certificaterequests-approver" not in running[0], running
    assert "certificaterequests-issuer-ca" in running[0], running
    for ns, name in MODULE_CERTIFICATES:
        got = wait_decision(kubectl, ns, name)
        assert got["type"] == "Approved", (ns, name, got)
        assert '"inference-module-pki"' in got["message"], got
        assert got["username"] == f"system:serviceaccount:{approver_policy.NAMESPACE}:cert-manager"


@pytest.mark.parametrize("exposure", ["ClusterLocal", "External"])
def test_an_orders_certificate_as_the_controller_renders_it_is_issued_for_its_names(
    policed: pathlib.Path, kubectl: Kubectl, namespace: str, exposure: str
) -> None:
    order = make_order(metadata={"name": "chat", "namespace": namespace})
    spec = make_class(spec={"exposure": {"type": exposure, "authentication": "Token"}}).spec
    settings = Settings()
    crt = certificate(order, endpoint_for(order, spec, settings), settings)
    crt["metadata"].pop("ownerReferences", None)  # no order object here: the collector would delete it
    apply(kubectl, crt)
    name = crt["metadata"]["name"]
    got = wait_decision(kubectl, namespace, name)
    assert got["type"] == "Approved" and '"inference-endpoints"' in got["message"], got
    wait_for(functools.partial(certificate_ready, kubectl, namespace, name), bool, timeout=60,
             message=f"Certificate {namespace}/{name} to be Ready")  # fmt: skip
    secret = json.loads(
        kubectl("get", "secret", crt["spec"]["secretName"], "-n", namespace, "-o", "json").stdout
    )
    leaf = x509.load_pem_x509_certificate(base64.b64decode(secret["data"]["tls.crt"]))
    sans = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert sorted(sans.get_values_for_type(x509.DNSName)) == sorted(crt["spec"]["dnsNames"])
    assert f"chat.{namespace}.svc" in crt["spec"]["dnsNames"]
    if exposure == "External":
        assert f"chat.{namespace}.inference.example.com" in crt["spec"]["dnsNames"]
    assert leaf.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is False


ATTACKS: dict[str, dict[str, Any]] = {
    "another namespace's Service": {"dnsNames": ["support-llm.support.svc"]},
    "another namespace's cluster name": {"dnsNames": ["support-llm.support.svc.cluster.local"]},
    "another namespace's external host": {"dnsNames": ["support-llm.support.inference.example.com"]},
    "a wildcard of its own namespace": {"dnsNames": ["*.{ns}.svc"]},
    "a CA": {"isCA": True, "dnsNames": ["chat.{ns}.svc"]},
    "a common name": {"commonName": "support-llm.support.svc", "dnsNames": ["chat.{ns}.svc"]},
    "a client certificate": {"usages": ["client auth"], "dnsNames": ["chat.{ns}.svc"]},
}


@pytest.mark.parametrize("attack", list(ATTACKS))
def test_a_tenant_certificate_beyond_its_own_names_is_denied_and_never_issued(
    policed: pathlib.Path, kubectl: Kubectl, namespace: str, attack: str
) -> None:
    spec = json.loads(json.dumps(ATTACKS[attack]).replace("{ns}", namespace))
    apply(kubectl, tenant_certificate(namespace, "grab", **spec))
    got = wait_decision(kubectl, namespace, "grab")
    assert got["type"] == "Denied", got
    assert got["reason"] == "policy.cert-manager.io" and "inference-endpoints" in got["message"], got
    assert not certificate_ready(kubectl, namespace, "grab")
    assert kubectl("get", "secret", "grab-tls", "-n", namespace, check=False).returncode != 0


def test_a_tenant_ca_from_the_self_signed_issuer_is_never_approved(
    policed: pathlib.Path, kubectl: Kubectl, namespace: str
) -> None:
    selfsigned = {"group": "cert-manager.io", "kind": "ClusterIssuer", "name": "inference-selfsigned"}
    apply(
        kubectl, tenant_certificate(namespace, "my-ca", isCA=True, commonName="my-ca", issuerRef=selfsigned)
    )
    wait_for(functools.partial(requests_for, kubectl, namespace, "my-ca"), bool, timeout=60,
             message="the CA's CertificateRequest")  # fmt: skip
    # A request made after it, which no policy refuses, is decided: approver-policy has seen both.
    apply(kubectl, tenant_certificate(namespace, "chat", dnsNames=[f"chat.{namespace}.svc"]))
    assert wait_decision(kubectl, namespace, "chat")["type"] == "Approved"

    wait_for(functools.partial(unprocessed_events, kubectl, namespace, "my-ca-"), lambda r: "Unprocessed" in r,
             timeout=30, message="approver-policy's Unprocessed event on the CA's request")  # fmt: skip
    assert decision(kubectl, namespace, "my-ca") is None
    assert kubectl("get", "secret", "my-ca-tls", "-n", namespace, check=False).returncode != 0


def own_name_csr(name: str) -> str:
    """A PEM CSR for one DNS name, base64 as a CertificateRequest carries it."""
    key = ec.generate_private_key(ec.SECP256R1())
    csr = (
        x509.CertificateSigningRequestBuilder()
        .subject_name(x509.Name([]))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
        .sign(key, hashes.SHA256())
    )
    return base64.b64encode(csr.public_bytes(serialization.Encoding.PEM)).decode()


def unprocessed_events(kubectl: Kubectl, namespace: str, prefix: str) -> list[str]:
    """Reasons of the Events approver-policy recorded on the namespace's requests named ``prefix``*."""
    events = json.loads(kubectl("get", "events", "-n", namespace, "-o", "json").stdout)["items"]
    return [e.get("reason", "") for e in events if e["involvedObject"]["kind"] == "CertificateRequest"
            and e["involvedObject"]["name"].startswith(prefix)]  # fmt: skip


def test_a_certificate_request_a_tenant_writes_itself_is_never_approved(
    policed: pathlib.Path, kubectl: Kubectl, namespace: str
) -> None:
    """Even for its own name: the request carries the tenant's identity, which may use no policy."""
    tenant = f"system:serviceaccount:{namespace}:default"
    kubectl("create", "role", "requests", "--verb=create,get", "--resource=certificaterequests.cert-manager.io",
            "-n", namespace)  # fmt: skip
    kubectl("create", "rolebinding", "requests", "--role=requests", f"--serviceaccount={namespace}:default",
            "-n", namespace)  # fmt: skip
    request = {
        "apiVersion": "cert-manager.io/v1",
        "kind": "CertificateRequest",
        "metadata": {"name": "by-hand", "namespace": namespace},
        "spec": {
            "request": own_name_csr(f"chat.{namespace}.svc"),
            "issuerRef": {"group": "cert-manager.io", "kind": "ClusterIssuer", "name": "inference-endpoints"},
            "usages": ["digital signature", "server auth"],
        },
    }
    kubectl("create", f"--as={tenant}", "-f", "-", input=yaml.safe_dump(request))
    cr = json.loads(kubectl("get", "certificaterequest", "by-hand", "-n", namespace, "-o", "json").stdout)
    assert cr["spec"]["username"] == tenant
    wait_for(functools.partial(unprocessed_events, kubectl, namespace, "by-hand"), lambda r: "Unprocessed" in r,
             timeout=30, message="approver-policy's Unprocessed event on the hand-written request")  # fmt: skip
    cr = json.loads(kubectl("get", "certificaterequest", "by-hand", "-n", namespace, "-o", "json").stdout)
    assert not {"Approved", "Denied"} & set(conditions(cr)), cr["status"]


def test_only_cert_managers_service_account_may_use_the_policies(
    policed: pathlib.Path, kubectl: Kubectl, namespace: str
) -> None:
    def can_use(who: str, policy: str) -> str:
        res = kubectl("auth", "can-i", "use", f"certificaterequestpolicies.policy.cert-manager.io/{policy}",
                      f"--as={who}", "-n", namespace, check=False)  # fmt: skip
        return res.stdout.strip()

    cert_manager = f"system:serviceaccount:{approver_policy.NAMESPACE}:cert-manager"
    assert can_use(cert_manager, "inference-endpoints") == "yes"
    assert can_use(cert_manager, "inference-module-pki") == "yes"
    assert can_use(f"system:serviceaccount:{namespace}:default", "inference-endpoints") == "no"
