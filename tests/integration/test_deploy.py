"""deploy/: what ``kubectl kustomize`` renders, and that every object of it applies to the real API server.

Rendering uses our built kubectl (its kustomize) and needs no cluster. The dry runs need the local
control plane with our CRDs, cert-manager's CRDs (from the cert-manager Go module, see
devtools/cluster/components/cert_manager.py) and approver-policy's (devtools/cluster/components/approver_policy.py) installed for real; the objects themselves are only ever applied with
``--dry-run=server``: the webhook configurations of deploy/base point at a Service that does not
exist here, and with failurePolicy Fail they would refuse every other test's writes.
"""

from __future__ import annotations

import copy
import os
import pathlib
import subprocess
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from controller.config.settings import parse_settings
from devtools.cluster import fleet, launcher
from devtools.cluster.components import approver_policy
from devtools.cluster.components.cert_manager import crds_dir
from devtools.cluster.handle import Kubectl

ROOT = pathlib.Path(__file__).resolve().parents[2]
# Render another tree's deploy/ (for example a copy with a work-in-progress file) when set.
DEPLOY = pathlib.Path(os.environ.get("INFERENCE_DEPLOY_DIR", ROOT / "deploy"))
EXAMPLES = ROOT / "examples"
Obj = dict[str, Any]


@pytest.fixture(scope="module")
def kubectl_bin() -> pathlib.Path:
    return launcher.build() / "kubectl"


def render(kubectl_bin: pathlib.Path, where: str) -> list[Obj]:
    res = subprocess.run(
        [str(kubectl_bin), "kustomize", str(DEPLOY / where)], capture_output=True, text=True, check=False
    )
    assert res.returncode == 0, f"kubectl kustomize deploy/{where}: {res.stderr}"
    return [d for d in yaml.safe_load_all(res.stdout) if d]


@pytest.fixture(scope="module")
def base(kubectl_bin: pathlib.Path) -> list[Obj]:
    return render(kubectl_bin, "base")


@pytest.fixture(scope="module")
def production(kubectl_bin: pathlib.Path) -> list[Obj]:
    return render(kubectl_bin, "overlays/production")


@pytest.fixture(scope="module")
def local(kubectl_bin: pathlib.Path) -> list[Obj]:
    return render(kubectl_bin, "overlays/local")


def one(objs: list[Obj], kind: str, name: str) -> Obj:
    found = [o for o in objs if o["kind"] == kind and o["metadata"]["name"] == name]
    assert len(found) == 1, f"{kind}/{name}: found {len(found)}"
    return found[0]


def kinds(objs: list[Obj]) -> set[str]:
    return {o["kind"] for o in objs}


def pod_spec(objs: list[Obj], name: str) -> Obj:
    spec: Obj = one(objs, "Deployment", name)["spec"]["template"]["spec"]
    return spec


# ------------------------------------------------------------------ rendering


def test_base_holds_every_part_the_module_needs(base: list[Obj]) -> None:
    crds = {o["metadata"]["name"] for o in base if o["kind"] == "CustomResourceDefinition"}
    assert crds == {
        f"{p}.ai.deckhouse.io" for p in ("inferenceservices", "inferenceserviceclasses", "inferencerecipes")
    }
    one(base, "Namespace", "d8-inference")
    one(base, "ConfigMap", "inference-settings")
    one(base, "InferenceServiceClass", "default-llm")
    one(base, "InferenceRecipe", "vllm")
    one(base, "NetworkPolicy", "inference-webhook")
    assert {"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"} <= kinds(base)
    assert {"Issuer", "ClusterIssuer", "Certificate", "CertificateRequestPolicy"} <= kinds(base)
    for o in base:
        assert (
            o["metadata"].get("labels", {}).get("app.kubernetes.io/part-of") == "inference-control-plane"
        ), o


def test_the_controller_runs_two_leader_elected_replicas_with_the_agreed_command(base: list[Obj]) -> None:
    dep = one(base, "Deployment", "inference-controller")
    assert dep["spec"]["replicas"] == 2
    spec = pod_spec(base, "inference-controller")
    assert spec["serviceAccountName"] == "inference-controller"
    (c,) = spec["containers"]
    assert [*c["command"], *c["args"]] == [
        "python", "-m", "controller", "--namespace=d8-inference", "--settings-configmap=inference-settings",
        "--leader-elect", "--metrics-port=8080", "--health-port=8081",
    ]  # fmt: skip
    ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    assert c["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert c["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert ports[c["readinessProbe"]["httpGet"]["port"]] == 8081
    assert c["image"].startswith("registry.example.com/inference/controller")


def test_the_controller_mounts_the_platform_ca_where_the_settings_say(base: list[Obj]) -> None:
    settings = parse_settings(one(base, "ConfigMap", "inference-settings")["data"], {})
    spec = pod_spec(base, "inference-controller")
    mounts = {m["name"]: m["mountPath"] for m in spec["containers"][0]["volumeMounts"]}
    volumes = {v["name"]: v for v in spec["volumes"]}
    (name,) = [n for n, path in mounts.items() if settings.platform_ca_file.startswith(path + "/")]
    secret = volumes[name]["secret"]
    assert secret["items"] == [{"key": "ca.crt", "path": pathlib.Path(settings.platform_ca_file).name}]
    cert = [o for o in base if o["kind"] == "Certificate" and o["metadata"].get("namespace") == "d8-inference"
            and o["spec"]["secretName"] == secret["secretName"]]  # fmt: skip
    assert len(cert) == 1, "a Certificate fills that Secret in the controller's namespace"
    # Its ca.crt is the CA of the endpoints' issuer: its own CA ClusterIssuer (so that only the module's
    # approver-policy selects its request, certificate-policy.yaml) signs from the same CA Secret.
    ref = cert[0]["spec"]["issuerRef"]
    assert ref["group"] == "cert-manager.io" and ref["kind"] == "ClusterIssuer", ref
    assert ref["name"] != settings.endpoint_issuer, "a request the endpoints' policy would refuse"
    bundle_issuer = one(base, ref["kind"], ref["name"])
    endpoints = one(base, settings.endpoint_issuer_kind, settings.endpoint_issuer)
    assert bundle_issuer["spec"] == {"ca": {"secretName": endpoints["spec"]["ca"]["secretName"]}}


@pytest.mark.parametrize("name", ["inference-controller", "inference-webhook"])
def test_a_pod_runs_as_a_numeric_non_root_user_with_a_read_only_root_and_no_capabilities(
    base: list[Obj], name: str
) -> None:
    spec = pod_spec(base, name)
    sc = spec["securityContext"]
    assert sc["runAsNonRoot"] is True
    assert isinstance(sc["runAsUser"], int)
    assert sc["runAsUser"] > 0
    assert sc["seccompProfile"] == {"type": "RuntimeDefault"}
    for c in spec["containers"]:
        csc = c["securityContext"]
        assert csc["readOnlyRootFilesystem"] is True
        assert csc["allowPrivilegeEscalation"] is False
        assert csc["capabilities"] == {"drop": ["ALL"]}
        assert c["resources"]["requests"], "requests set"


def test_the_webhook_runs_two_replicas_over_tls_with_https_probes_and_no_token(base: list[Obj]) -> None:
    dep = one(base, "Deployment", "inference-webhook")
    assert dep["spec"]["replicas"] == 2
    spec = pod_spec(base, "inference-webhook")
    assert spec["automountServiceAccountToken"] is False
    (c,) = spec["containers"]
    assert [*c["command"], *c["args"]] == [
        "python", "-m", "webhook", "--cert-file=/tls/tls.crt", "--key-file=/tls/tls.key", "--port=9443"
    ]  # fmt: skip
    for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
        get = c[probe]["httpGet"]
        assert (get["path"], get["scheme"], get["port"]) == (path, "HTTPS", "https")
    assert {p["name"]: p["containerPort"] for p in c["ports"]} == {"https": 9443}
    sa = one(base, "ServiceAccount", "inference-webhook")
    assert sa["automountServiceAccountToken"] is False


def test_the_webhook_service_account_is_bound_to_nothing(base: list[Obj]) -> None:
    for o in base:
        if o["kind"] in ("RoleBinding", "ClusterRoleBinding"):
            names = {s.get("name") for s in o.get("subjects", [])}
            assert "inference-webhook" not in names, o["metadata"]["name"]


def test_a_disruption_budget_keeps_a_webhook_replica(base: list[Obj]) -> None:
    pdb = one(base, "PodDisruptionBudget", "inference-webhook")
    labels = one(base, "Deployment", "inference-webhook")["spec"]["template"]["metadata"]["labels"]
    assert pdb["spec"]["minAvailable"] == 1
    assert pdb["spec"]["selector"]["matchLabels"].items() <= labels.items()


def test_the_webhook_service_certificate_and_configurations_agree(base: list[Obj]) -> None:
    svc = one(base, "Service", "inference-webhook")
    ((port,),) = [svc["spec"]["ports"]]
    assert (port["port"], port["targetPort"]) == (443, "https")
    cert = one(base, "Certificate", "inference-webhook")
    assert "inference-webhook.d8-inference.svc" in cert["spec"]["dnsNames"]
    volumes = {v["name"]: v for v in pod_spec(base, "inference-webhook")["volumes"]}
    assert volumes["tls"]["secret"]["secretName"] == cert["spec"]["secretName"] == "inference-webhook-tls"
    issuer = one(base, "Issuer", cert["spec"]["issuerRef"]["name"])
    ca_cert = [o for o in base if o["kind"] == "Certificate" and o["spec"].get("secretName") == issuer["spec"]["ca"]
               ["secretName"]]  # fmt: skip
    assert ca_cert[0]["spec"]["isCA"] is True, "a CA issuer over a CA certificate"
    one(base, "Issuer", ca_cert[0]["spec"]["issuerRef"]["name"])
    confs = [o for o in base if o["kind"].endswith("WebhookConfiguration")]
    assert len(confs) == 2
    for conf in confs:
        assert (
            conf["metadata"]["annotations"]["cert-manager.io/inject-ca-from"]
            == "d8-inference/inference-webhook"
        )
        for hook in conf["webhooks"]:
            service = hook["clientConfig"]["service"]
            assert (service["name"], service["namespace"], service.get("port", 443)) == (
                "inference-webhook", "d8-inference", 443
            )  # fmt: skip
            assert hook["failurePolicy"] == "Fail"


def test_the_network_policy_admits_only_the_tls_port_of_the_webhook_pods(base: list[Obj]) -> None:
    policy = one(base, "NetworkPolicy", "inference-webhook")
    labels = one(base, "Deployment", "inference-webhook")["spec"]["template"]["metadata"]["labels"]
    assert policy["spec"]["podSelector"]["matchLabels"].items() <= labels.items()
    assert policy["spec"]["policyTypes"] == ["Ingress"]
    ports = [p for rule in policy["spec"]["ingress"] for p in rule["ports"]]
    assert ports == [{"protocol": "TCP", "port": 9443}]
    for rule in policy["spec"]["ingress"]:
        assert rule["from"], "never from everywhere"
        assert all("ipBlock" in f for f in rule["from"]), "no pod or namespace may reach it"


def test_users_get_orders_through_aggregated_roles_and_never_classes_or_recipes(base: list[Obj]) -> None:
    roles = [o for o in base if o["kind"] == "ClusterRole" and any(
        k.startswith("rbac.authorization.k8s.io/aggregate-to-") for k in o["metadata"].get("labels", {}))]  # fmt: skip
    aggregated = {
        k.rsplit("-", 1)[-1] for r in roles for k in r["metadata"]["labels"] if "aggregate-to-" in k
    }
    assert aggregated == {"admin", "edit", "view"}
    for role in roles:
        resources = {res for rule in role["rules"] for res in rule["resources"]}
        assert resources <= {"inferenceservices", "inferenceservices/status"}, role["metadata"]["name"]


def test_the_local_overlay_has_no_in_cluster_processes_and_no_cert_manager_objects(local: list[Obj]) -> None:
    assert not kinds(local) & {"Deployment", "Service", "PodDisruptionBudget", "NetworkPolicy"}
    assert not [o for o in local if o["apiVersion"].startswith("cert-manager.io/")]
    assert not [o for o in local if o["kind"].endswith("WebhookConfiguration")], "hack/demo registers a URL"
    one(local, "InferenceServiceClass", "default-llm")
    one(local, "InferenceRecipe", "vllm")
    one(local, "ClusterRole", "inference:edit")
    data = one(local, "ConfigMap", "inference-settings")["data"]
    assert "probeAddressOverride" in data
    settings = parse_settings(data, {})
    assert settings.model_storage_class == fleet.MODEL_STORAGE_CLASS, "model volumes bind to the local PVs"


def test_production_pins_images_by_digest_and_spreads_replicas(production: list[Obj]) -> None:
    for name in ("inference-controller", "inference-webhook"):
        spec = pod_spec(production, name)
        for c in spec["containers"]:
            assert "@sha256:" in c["image"], c["image"]
        anti = spec["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        assert anti[0]["topologyKey"] == "kubernetes.io/hostname"


# ------------------------------------------------------------------ server-side dry run


@pytest.fixture(scope="module")
def installed(kubectl: Kubectl, crds: None) -> None:
    """cert-manager's and approver-policy's CRDs and the namespaces the namespaced objects live in, for real."""
    kubectl(
        "apply", "--server-side", "--force-conflicts", "--field-manager=test-deploy", "-f", str(crds_dir())
    )
    approver_policy.install_crds(kubectl, field_manager="test-deploy")
    kubectl("wait", "--for=condition=Established", "--timeout=60s", "crd/certificates.cert-manager.io",
            "crd/issuers.cert-manager.io", "crd/clusterissuers.cert-manager.io")  # fmt: skip
    kubectl("apply", "--server-side", "--force-conflicts", "--field-manager=test-deploy",
            "-f", str(ROOT / "deploy" / "base" / "platform" / "namespace.yaml"))  # fmt: skip
    kubectl("create", "namespace", "cert-manager", check=False)


def dry_run(kubectl: Kubectl, objs: list[Obj], *, namespace: str | None = None) -> list[str]:
    """``kubectl apply --dry-run=server --validate=strict``: the lines kubectl printed, one per object."""
    where = ["-n", namespace] if namespace else []
    res = kubectl("apply", "--dry-run=server", "--validate=strict", *where, "-f", "-",
                  input=yaml.safe_dump_all(objs), check=False)  # fmt: skip
    assert res.returncode == 0, f"dry run refused:\n{res.stderr}"
    lines = [line for line in res.stdout.splitlines() if line.strip()]
    assert all(line.endswith("(server dry run)") for line in lines), lines
    return lines


@pytest.mark.cluster
@pytest.mark.parametrize("overlay", ["base", "overlays/production", "overlays/local"])
def test_every_rendered_object_applies_with_a_server_side_dry_run(
    kubectl: Kubectl, installed: None, kubectl_bin: pathlib.Path, overlay: str
) -> None:
    objs = render(kubectl_bin, overlay)
    lines = dry_run(kubectl, objs)
    assert len(lines) == len(objs)


@pytest.mark.cluster
def test_the_dry_run_is_real_a_wrong_field_is_refused(
    kubectl: Kubectl, installed: None, base: list[Obj]
) -> None:
    cls = copy.deepcopy(one(base, "InferenceServiceClass", "default-llm"))
    cls["spec"]["placement"]["sharingModes"] = ["Exclusive", "Sometimes"]
    res = kubectl("apply", "--dry-run=server", "-f", "-", input=yaml.safe_dump(cls), check=False)
    assert res.returncode != 0
    assert "Sometimes" in res.stderr


def example_objects() -> list[tuple[str, Obj]]:
    out = []
    for path in sorted(EXAMPLES.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc:
                out.append((f"{path.name}:{doc['kind']}/{doc['metadata']['name']}", doc))
    return out


EXAMPLE_OBJECTS = example_objects()


@pytest.fixture(scope="module")
def examples_namespace(kubectl: Kubectl) -> Iterator[str]:
    ns = f"t-examples-{uuid.uuid4().hex[:6]}"
    kubectl("create", "namespace", ns)
    yield ns
    kubectl("delete", "namespace", ns, "--wait=false")


@pytest.mark.cluster
@pytest.mark.parametrize(("where", "doc"), EXAMPLE_OBJECTS, ids=[i for i, _ in EXAMPLE_OBJECTS])
def test_an_example_applies_with_a_server_side_dry_run(
    kubectl: Kubectl, installed: None, examples_namespace: str, where: str, doc: Obj
) -> None:
    obj = copy.deepcopy(doc)
    namespaced = obj["kind"] != "InferenceServiceClass"
    if namespaced:
        obj["metadata"]["namespace"] = examples_namespace
    (line,) = dry_run(kubectl, [obj])
    assert obj["metadata"]["name"] in line, where


@pytest.mark.cluster
def test_the_demo_registration_of_the_local_webhook_is_valid_to_the_api_server(
    kubectl: Kubectl, installed: None, tmp_path: pathlib.Path
) -> None:
    from devtools.cluster import pki
    from standins import local_webhook

    pki.make_ca(tmp_path, "ca", "test CA")
    pem = (tmp_path / "ca.crt").read_bytes()
    confs = local_webhook.configurations(base_url="https://127.0.0.1:9443", ca_bundle=pem)
    assert {c["kind"] for c in confs} == {"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"}
    lines = dry_run(kubectl, confs)
    assert len(lines) == len(confs)
