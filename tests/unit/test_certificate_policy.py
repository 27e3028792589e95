"""The approver-policy component (hack/approver_policy.py) and the shipped CertificateRequestPolicies
(deploy/base/cert-manager/certificate-policy.yaml), without a cluster.

The DNS-name rule is evaluated here with cel-python against what the controller renders and what a
tenant could ask; approver-policy evaluates it with cel-go (RE2): tests/integration/
test_certificate_policy.py checks the same names against the real approver.
"""

from __future__ import annotations

import pathlib
from typing import Any

import celpy
import pytest
import yaml
from celpy import celtypes

from controller.config.settings import Settings
from controller.render.exposure import endpoint_for
from controller.render.network import certificate
from devtools.cluster.components import approver_policy
from devtools.cluster.config import read_versions
from tests.unit.controller.builders import make_class, make_order

ROOT = pathlib.Path(__file__).resolve().parents[2]
POLICY_FILE = ROOT / "deploy" / "base" / "cert-manager" / "certificate-policy.yaml"
DOCS: list[dict[str, Any]] = [d for d in yaml.safe_load_all(POLICY_FILE.read_text()) if d]


def one(kind: str, name: str) -> dict[str, Any]:
    (found,) = [d for d in DOCS if d["kind"] == kind and d["metadata"]["name"] == name]
    return found


def dns_rule_allows(name: str, namespace: str) -> bool:
    (validation,) = one("CertificateRequestPolicy", "inference-endpoints")["spec"]["allowed"]["dnsNames"][
        "validations"
    ]
    env = celpy.Environment()
    program = env.program(env.compile(validation["rule"]))
    cr = celtypes.MapType({celtypes.StringType("namespace"): celtypes.StringType(namespace)})
    return bool(program.evaluate({"self": celtypes.StringType(name), "cr": cr}))


@pytest.mark.parametrize("exposure", ["ClusterLocal", "External"])
def test_every_name_the_controller_renders_for_an_order_passes_the_rule(exposure: str) -> None:
    order = make_order(metadata={"name": "support-llm", "namespace": "support"})
    spec = make_class(spec={"exposure": {"type": exposure, "authentication": "Token"}}).spec
    settings = Settings()
    names = certificate(order, endpoint_for(order, spec, settings), settings)["spec"]["dnsNames"]
    assert len(names) == (3 if exposure == "External" else 2)
    assert all(dns_rule_allows(n, "support") for n in names), names
    assert not any(dns_rule_allows(n, "tenant") for n in names), names


@pytest.mark.parametrize(
    "name",
    [
        "support-llm.support.svc",  # another namespace's Service
        "support-llm.support.svc.cluster.local",
        "support-llm.support.inference.example.com",
        "*.tenant.svc",  # a wildcard
        "*.tenant.inference.example.com",
        "a.b.tenant.svc",  # more than one label before the namespace
        "chat.tenant.svc.evil.example",  # a suffix after the service domain
        "chat.tenant.svcx",
        "9chat.tenant.svc",  # not a DNS-1035 label: no order has it
        "tenant.svc",
        "chat.tenant",
    ],
)
def test_a_name_outside_the_namespaces_own_service_names_fails_the_rule(name: str) -> None:
    assert not dns_rule_allows(name, "tenant")


def test_the_endpoints_policy_selects_the_cluster_issuer_everywhere_and_allows_no_ca() -> None:
    spec = one("CertificateRequestPolicy", "inference-endpoints")["spec"]
    # kind is part of the selector: a tenant's own Issuer named inference-endpoints is not this one.
    assert spec["selector"] == {
        "issuerRef": {"name": "inference-endpoints", "kind": "ClusterIssuer", "group": "cert-manager.io"}
    }
    allowed = spec["allowed"]
    assert allowed["isCA"] is False
    assert allowed["dnsNames"]["required"] is True
    assert "values" not in allowed["dnsNames"]  # only the rule decides
    assert set(allowed) == {"isCA", "dnsNames", "usages"}  # no common name, IP, URI, e-mail, subject
    assert "client auth" not in allowed["usages"] and "cert sign" not in allowed["usages"]


def test_the_module_policy_covers_only_the_module_namespaces_and_the_settings_issuer() -> None:
    spec = one("CertificateRequestPolicy", "inference-module-pki")["spec"]
    assert spec["selector"]["namespace"] == {"matchNames": ["d8-inference", "cert-manager"]}
    settings = Settings()
    assert approver_policy_wildcard(spec["selector"]["issuerRef"]["name"], settings.endpoint_issuer)


def approver_policy_wildcard(pattern: str, value: str) -> bool:
    """approver-policy's wildcard: ``*`` is any string (pkg/internal/util/wildcard.go)."""
    head, star, tail = pattern.partition("*")
    return value == pattern if not star else value.startswith(head) and value.endswith(tail)


def test_only_cert_managers_service_account_is_bound_to_both_policies() -> None:
    role = one("ClusterRole", "inference:certificate-policies")
    assert role["rules"] == [
        {
            "apiGroups": ["policy.cert-manager.io"],
            "resources": ["certificaterequestpolicies"],
            "verbs": ["use"],
            "resourceNames": ["inference-module-pki", "inference-endpoints"],
        }
    ]
    binding = one("ClusterRoleBinding", "inference:certificate-policies")
    assert binding["roleRef"]["name"] == "inference:certificate-policies"
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "cert-manager", "namespace": "cert-manager"}
    ]


def test_the_component_is_pinned_built_from_its_own_main_and_runs_on_loopback(tmp_path: pathlib.Path) -> None:
    pinned = read_versions((ROOT / "devtools" / "cluster" / "versions.env").read_text())[
        "APPROVER_POLICY_VERSION"
    ]
    assert approver_policy.version() == pinned
    steps = approver_policy.build_steps(pinned, tmp_path / "out")
    assert ["nice", "-n", "19", "go", "get", f"github.com/cert-manager/approver-policy/cmd@{pinned}"] in steps
    assert (
        steps[-1][:6] == ["nice", "-n", "19", "go", "build", "-p"]
        and steps[-1][-1] == approver_policy.PACKAGE
    )
    argv = approver_policy.argv(tmp_path / "bin", kubeconfig=tmp_path / "kc", ready_port=1, webhook_port=2)
    assert "--metrics-bind-address=0" in argv
    assert "--readiness-probe-bind-address=127.0.0.1:1" in argv
    assert "--webhook-host=127.0.0.1" in argv and "--webhook-port=2" in argv
    assert approver_policy.CERT_MANAGER_CONTROLLERS == "--controllers=*,-certificaterequests-approver"


def test_the_identity_policy_stamps_the_creator_on_every_new_certificate_request() -> None:
    policy, binding = approver_policy.identity_policy()
    (rule,) = policy["spec"]["matchConstraints"]["resourceRules"]
    assert rule["operations"] == ["CREATE"] and rule["resources"] == ["certificaterequests"]
    (mutation,) = policy["spec"]["mutations"]
    expression = mutation["jsonPatch"]["expression"]
    assert '"/spec/username", value: request.userInfo.username' in expression
    assert '"/spec/groups"' in expression
    assert binding["spec"]["policyName"] == policy["metadata"]["name"]


def selects(policy: dict[str, Any], namespace: str, issuer_ref: dict[str, Any]) -> bool:
    """Whether a policy's selector picks a request to ``issuer_ref`` from ``namespace`` (approver-policy's
    issuerRef and namespace.matchNames selectors; an unset field matches anything)."""
    selector = policy["spec"]["selector"]
    ref = selector.get("issuerRef") or {}
    wanted = {"name": issuer_ref["name"], "kind": issuer_ref.get("kind", "Issuer"),
              "group": issuer_ref.get("group", "cert-manager.io")}  # fmt: skip
    if not all(approver_policy_wildcard(ref[k], wanted[k]) for k in ("name", "kind", "group") if k in ref):
        return False
    names = (selector.get("namespace") or {}).get("matchNames")
    return names is None or any(approver_policy_wildcard(n, namespace) for n in names)


def test_each_module_certificate_is_selected_by_the_module_policy_alone() -> None:
    """A request two policies select is denied if the one that refuses it is loaded first (approver-policy
    denies when every applicable policy refuses), and cert-manager retries a denied issuance only after an
    hour. The CA bundle for the controller was issued by inference-endpoints once, and CI timed out on it."""
    policies = [d for d in DOCS if d["kind"] == "CertificateRequestPolicy"]
    pki = [
        d
        for f in ("webhook-pki.yaml", "endpoints-pki.yaml")
        for d in yaml.safe_load_all((POLICY_FILE.parent / f).read_text())
        if d and d["kind"] == "Certificate"
    ]
    assert len(pki) == 4
    for cert in pki:
        chosen = [
            p["metadata"]["name"]
            for p in policies
            if selects(p, cert["metadata"]["namespace"], cert["spec"]["issuerRef"])
        ]
        assert chosen == ["inference-module-pki"], (cert["metadata"], chosen)
    order_ref = {"name": Settings().endpoint_issuer, "kind": "ClusterIssuer", "group": "cert-manager.io"}
    assert [p["metadata"]["name"] for p in policies if selects(p, "tenant", order_ref)] == [
        "inference-endpoints"
    ]
