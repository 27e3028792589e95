"""What render produces is accepted by the real API server, and its pod by Pod Security ``restricted``.

- every object of a workload (with GPU tolerations, a node selector, a tensor-parallel /dev/shm and
  probes) applies with a strict server-side dry run;
- the claim template with the NVIDIA driver's TimeSlicing and MPS configs is accepted;
- the pod of the Deployment is admitted in a namespace that enforces ``restricted``, and the same
  pod without our security context is refused there (the check is real);
- no runtime pod (the Deployment's, the LeaderWorkerSet's leader and worker) gets a ServiceAccount
  token from the ServiceAccount admission, which mounts one in the same pod without our setting;
- the class's new placement fields are in the CRD, with descriptions ``kubectl explain`` shows.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from controller import render
from controller.config.settings import parse_settings
from devtools.cluster.components.cert_manager import crds_dir
from devtools.cluster.handle import Kubectl
from tests.integration.conftest import ROOT, wait_for
from tests.unit.controller.builders import make_class, make_order
from tests.unit.controller.test_render import Plan

pytestmark = pytest.mark.cluster

SETTINGS = parse_settings(
    {
        "gpuNodeTolerations": '[{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]',
        "gpuNodeSelector": '{"nvidia.com/gpu.present": "true"}',
        "modelStorageClass": "standard",
    },
    {},
)
CLASS = make_class(
    spec={
        "placement": {
            "nodeSelector": {"pool": "h100"},
            "tolerations": [
                {"key": "dedicated", "value": "llm", "effect": "NoExecute", "tolerationSeconds": 60}
            ],
        }
    }
).spec
TP_PLAN = Plan(accelerator_count=4, model_volume="145Gi")


@pytest.fixture(scope="module")
def cert_manager_crds(kubectl: Kubectl, crds: None) -> None:
    kubectl(
        "apply", "--server-side", "--force-conflicts", "--field-manager=test-render", "-f", str(crds_dir())
    )
    kubectl("wait", "--for=condition=Established", "--timeout=60s", "crd/certificates.cert-manager.io")


@pytest.fixture(scope="module")
def priority_class(kubectl: Kubectl) -> None:
    """The bundled class's PriorityClass, which the pod names (the Priority admission checks it)."""
    docs = yaml.safe_load_all((ROOT / "deploy/base/platform/default-llm.yaml").read_text())
    (pc,) = [d for d in docs if d["kind"] == "PriorityClass"]
    kubectl("apply", "--server-side", "--force-conflicts", "--field-manager=test-render", "-f", "-",
            input=yaml.safe_dump(pc))  # fmt: skip


@pytest.fixture
def restricted(api: k8s.ApiClient, namespace: str, priority_class: None) -> str:
    labels = {
        "pod-security.kubernetes.io/enforce": "restricted",
        "pod-security.kubernetes.io/enforce-version": "latest",
    }
    k8s.CoreV1Api(api).patch_namespace(namespace, {"metadata": {"labels": labels}})
    return namespace


def order_in(namespace: str) -> Any:
    return make_order(metadata={"namespace": namespace, "name": "support-llm"})


def dry_run(kubectl: Kubectl, objs: list[dict[str, Any]]) -> list[str]:
    res = kubectl("apply", "--dry-run=server", "--validate=strict", "--server-side", "--field-manager=test-render",
                  "-f", "-", input=yaml.safe_dump_all(objs), check=False)  # fmt: skip
    assert res.returncode == 0, f"dry run refused:\n{res.stderr}"
    return [line for line in res.stdout.splitlines() if line.strip()]


def test_every_rendered_object_applies_with_a_strict_server_side_dry_run(
    kubectl: Kubectl, namespace: str, cert_manager_crds: None
) -> None:
    order = order_in(namespace)
    objs = render.workload(order, TP_PLAN, CLASS, SETTINGS, revision="abc")
    objs.append(render.auth_secret(order, "t"))
    assert len(dry_run(kubectl, objs)) == len(objs)


@pytest.mark.parametrize(
    "plan",
    [
        Plan(sharing_mode="TimeSlicing", share_percent=25, capacity_requests={"memory": "20Gi"}),
        Plan(sharing_mode="MPS", share_percent=40, capacity_requests={"memory": "32Gi"}),
        Plan(device_class="mig.nvidia.com", sharing_mode="MPS", share_percent=50),
    ],
    ids=["time-slicing", "mps", "mps-on-mig"],
)
def test_a_claim_template_with_the_drivers_sharing_config_is_accepted(
    kubectl: Kubectl, namespace: str, crds: None, plan: Plan
) -> None:
    tpl = render.resource_claim_template(order_in(namespace), plan)
    assert "config" in tpl["spec"]["spec"]["devices"]
    (line,) = dry_run(kubectl, [tpl])
    assert "resourceclaimtemplate" in line


def pod_of(namespace: str) -> dict[str, Any]:
    dep = render.deployment(order_in(namespace), TP_PLAN, CLASS, SETTINGS, revision="abc")
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "support-llm-pod", "namespace": namespace},
        "spec": dep["spec"]["template"]["spec"],
    }


def test_the_runtime_pod_is_admitted_in_a_namespace_that_enforces_restricted(
    api: k8s.ApiClient, restricted: str
) -> None:
    core: Any = k8s.CoreV1Api(api)
    created: Any = core.create_namespaced_pod(restricted, pod_of(restricted), dry_run="All")
    spec = created.spec
    assert spec.security_context.run_as_non_root is True
    shm = next(v for v in spec.volumes if v.name == "shm")
    assert (shm.empty_dir.medium, shm.empty_dir.size_limit) == ("Memory", "4Gi")
    assert {t.key for t in spec.tolerations} >= {"nvidia.com/gpu", "dedicated"}
    assert spec.node_selector == {"nvidia.com/gpu.present": "true", "pool": "h100"}


def test_the_same_pod_without_our_security_context_is_refused_there(
    api: k8s.ApiClient, restricted: str
) -> None:
    pod = pod_of(restricted)
    del pod["spec"]["securityContext"]
    for c in pod["spec"]["containers"] + pod["spec"]["initContainers"]:
        del c["securityContext"]
    core: Any = k8s.CoreV1Api(api)
    with pytest.raises(ApiException) as refused:
        core.create_namespaced_pod(restricted, pod, dry_run="All")
    assert refused.value.status == 403
    body = json.loads(refused.value.body or "{}")
    assert 'violates PodSecurity "restricted' in body["message"]


def test_kubectl_explain_describes_the_new_class_and_recipe_fields(kubectl: Kubectl, crds: None) -> None:
    tolerations = kubectl("explain", "inferenceserviceclasses.spec.placement.tolerations").stdout
    assert "Taints of GPU nodes the runtime pods tolerate" in tolerations
    selector = kubectl("explain", "inferenceserviceclasses.spec.placement.nodeSelector").stdout
    assert "Node labels the runtime pods require" in selector
    trust = kubectl("explain", "inferencerecipes.spec.trustRemoteCode").stdout
    assert "--trust-remote-code" in trust


def test_the_model_volume_the_api_server_stores_holds_the_selected_files(
    api: k8s.ApiClient, kubectl: Kubectl, namespace: str, cert_manager_crds: None
) -> None:
    """A planned Llama-3.1-8B-Instruct of the Hub mirror: the PVC as the API server stores it requests
    at least the files the fetcher downloads, and the Deployment with the fetcher's file patterns applies."""
    from shared.quantity import parse_bytes
    from tests.unit.test_fetch_plan import rendered
    from tests.unit.test_model_files import FACTS

    facts = FACTS["meta-llama/Llama-3.1-8B-Instruct"]
    pvc, dep = rendered(facts, order_in(namespace))
    core: Any = k8s.CoreV1Api(api)
    stored = core.create_namespaced_persistent_volume_claim(namespace, pvc).to_dict()
    request = parse_bytes(stored["spec"]["resources"]["requests"]["storage"])
    assert request >= sum(size or 0 for size in facts.files.values()) * 1.1
    assert len(dry_run(kubectl, [dep])) == 1


def _token_volumes(api: k8s.ApiClient, namespace: str, spec: dict[str, Any]) -> list[str]:
    """The projected token volumes the ServiceAccount admission adds to a pod of ``spec`` (dry run)."""
    core: Any = k8s.CoreV1Api(api)
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": namespace}, "spec": spec}
    created: Any = core.create_namespaced_pod(namespace, pod, dry_run="All")
    return [v.name for v in created.spec.volumes if v.projected is not None]


def test_no_runtime_pod_is_given_a_service_account_token(
    api: k8s.ApiClient, namespace: str, priority_class: None
) -> None:
    from tests.unit.controller.test_render_group import PLAN as GROUP_PLAN

    core: Any = k8s.CoreV1Api(api)
    # the ServiceAccount admission refuses a pod until the namespace's default ServiceAccount exists
    wait_for(lambda: core.read_namespaced_service_account("default", namespace), lambda sa: sa is not None)
    order = order_in(namespace)
    (lws,) = [
        o
        for o in render.workload(order, GROUP_PLAN, CLASS, SETTINGS, revision="a")
        if o["kind"] == "LeaderWorkerSet"
    ]
    tpl = lws["spec"]["leaderWorkerTemplate"]
    specs = {
        "deployment": pod_of(namespace)["spec"],
        "leader": tpl["leaderTemplate"]["spec"],
        "worker": tpl["workerTemplate"]["spec"],
    }
    for role, spec in specs.items():
        assert spec["automountServiceAccountToken"] is False, role
        assert _token_volumes(api, namespace, spec) == [], role
        # the check is real: the same pod without the setting gets the namespace's token
        mounted = {k: v for k, v in spec.items() if k != "automountServiceAccountToken"}
        assert [n for n in _token_volumes(api, namespace, mounted) if n.startswith("kube-api-access")], role
