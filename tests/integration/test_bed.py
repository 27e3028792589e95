"""The local control plane is the real thing: the behaviours the product relies on, observed on it.

DRA allocation by the kube-scheduler (whole GPUs from a ResourceClaimTemplate, MIG devices by
profile, shared L4 memory through consumable capacity, refusals with the scheduler's message), pods
turning Running on KWOK nodes, garbage collection of owned objects, the HPA controller, priority and
preemption, the server version of the pinned build, and an idempotent ``up``.

Other tests share the fleet at the same time, so each test picks devices that are free when it
starts, and holds them only inside its own namespace (deleted afterwards). The preemption test
brings its own tainted KWOK node, so nothing else can land on it or be preempted.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from devtools.cluster import config, fleet, launcher
from devtools.cluster.handle import Kubectl
from tests.integration.conftest import ROOT

pytestmark = pytest.mark.cluster

Obj = dict[str, Any]
WaitFor = Callable[..., Any]
PAUSE = "registry.k8s.io/pause:3.10"
L4_PRODUCT = fleet.L4.product


# --- builders ---------------------------------------------------------------------------------


def make_exactly(device_class: str = "gpu.nvidia.com", **changes: Any) -> Obj:
    """A device request's ``exactly`` block: one device of the class, plus changes."""
    return {"deviceClassName": device_class, "allocationMode": "ExactCount", "count": 1, **changes}


def make_claim(name: str, namespace: str, exactly: Obj) -> Obj:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}},
    }


def make_pod_spec(*, claim: str | None = None, claim_template: str | None = None, **changes: Any) -> Obj:
    """A pause pod's spec; with a claim (or a claim template) its one container uses the device."""
    container: Obj = {"name": "main", "image": PAUSE, "resources": {"requests": {"cpu": "10m"}}}
    spec: Obj = {"containers": [container], "terminationGracePeriodSeconds": 0}
    if claim or claim_template:
        container["resources"]["claims"] = [{"name": "gpu"}]
        source = {"resourceClaimName": claim} if claim else {"resourceClaimTemplateName": claim_template}
        spec["resourceClaims"] = [{"name": "gpu", **source}]
    return {**spec, **changes}


def make_pod(name: str, namespace: str, **spec_changes: Any) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": make_pod_spec(**spec_changes),
    }


def make_deployment(name: str, namespace: str, *, replicas: int = 1, **spec_changes: Any) -> Obj:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": make_pod_spec(**spec_changes)},
        },
    }


def cel(expression: str) -> Obj:
    return {"cel": {"expression": expression}}


def attribute_is(name: str, value: str) -> Obj:
    return cel(f'device.attributes["{fleet.DRIVER}"].{name} == "{value}"')


# --- reading the world ------------------------------------------------------------------------


def apply(kubectl: Kubectl, *objects: Obj) -> None:
    kubectl(
        "apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": list(objects)})
    )


def get(kubectl: Kubectl, kind: str, name: str, namespace: str | None = None) -> Obj:
    scope = ["-n", namespace] if namespace else []
    return dict(json.loads(kubectl("get", kind, name, *scope, "-o", "json").stdout))


def items(kubectl: Kubectl, kind: str, *selectors: str, namespace: str | None = None) -> list[Obj]:
    scope = ["-n", namespace] if namespace else ["-A"]
    return list(json.loads(kubectl("get", kind, *scope, *selectors, "-o", "json").stdout)["items"])


def gone(kubectl: Kubectl, kind: str, name: str, namespace: str) -> bool:
    res = kubectl("get", kind, name, "-n", namespace, "-o", "name", "--ignore-not-found", check=False)
    return res.returncode == 0 and not res.stdout.strip()


def allocation(claim: Obj) -> Obj:
    return dict((claim.get("status") or {}).get("allocation") or {})


def allocated_results(claim: Obj) -> list[Obj]:
    return list((allocation(claim).get("devices") or {}).get("results") or [])


def allocated_node(claim: Obj) -> str:
    """The node named by the allocation's node selector (``metadata.name In [node]``)."""
    (term,) = allocation(claim)["nodeSelector"]["nodeSelectorTerms"]
    (field,) = term["matchFields"]
    assert field["key"] == "metadata.name" and field["operator"] == "In", field
    (node,) = field["values"]
    return str(node)


def condition(obj: Obj, type_: str) -> Obj:
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c["type"] == type_:
            return dict(c)
    return {}


def is_running(pod: Obj) -> bool:
    return bool((pod.get("status") or {}).get("phase") == "Running")


def is_unschedulable(pod: Obj) -> bool:
    c = condition(pod, "PodScheduled")
    return c.get("status") == "False" and c.get("reason") == "Unschedulable"


@dataclass(frozen=True)
class Device:
    node: str
    pool: str
    name: str
    attributes: dict[str, Any]
    memory: str


def declared_devices() -> dict[tuple[str, str], Device]:
    """The fleet's devices as ``devtools/cluster/fleet.py`` declares them, keyed by (pool, device)."""
    out = {}
    for s in fleet.resource_slices(fleet.default_fleet()):
        spec = s["spec"]
        for d in spec["devices"]:
            attrs = {k: next(iter(v.values())) for k, v in d["attributes"].items()}
            out[(spec["pool"]["name"], d["name"])] = Device(
                spec["nodeName"], spec["pool"]["name"], d["name"], attrs, d["capacity"]["memory"]["value"]
            )
    return out


def held_devices(kubectl: Kubectl) -> set[tuple[str, str]]:
    """(pool, device) of every device some claim in the cluster holds (wholly or in part)."""
    return {(r["pool"], r["device"]) for c in items(kubectl, "resourceclaims") for r in allocated_results(c)}


def pod_claim_name(pod: Obj) -> str:
    (st,) = pod["status"]["resourceClaimStatuses"]
    return str(st["resourceClaimName"])


# --- DRA ------------------------------------------------------------------------------------


def test_a_deployment_with_a_claim_template_gets_a_gpu_allocated_and_runs_on_a_kwok_node(
    kubectl: Kubectl, namespace: str, wait_for: WaitFor
) -> None:
    template = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "one-gpu", "namespace": namespace},
        "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": make_exactly()}]}}},
    }
    apply(kubectl, template, make_deployment("runtime", namespace, claim_template="one-gpu"))

    pod = wait_for(
        lambda: items(kubectl, "pods", "-l", "app=runtime", namespace=namespace),
        lambda pods: len(pods) == 1 and is_running(pods[0]),
        timeout=90,
        message="the Deployment's pod to turn Running",
    )[0]
    claim = wait_for(
        lambda: get(kubectl, "resourceclaim", pod_claim_name(pod), namespace),
        lambda c: bool(allocated_results(c)),
        timeout=90,
        message="the generated claim to be allocated",
    )

    (result,) = allocated_results(claim)
    device = declared_devices()[(result["pool"], result["device"])]
    assert result["driver"] == fleet.DRIVER
    assert device.attributes["type"] == "gpu"
    assert allocated_node(claim) == device.node == pod["spec"]["nodeName"]
    node = get(kubectl, "node", device.node)
    assert node["metadata"]["annotations"]["kwok.x-k8s.io/node"] == "fake"
    assert pod["metadata"]["uid"] in [r["uid"] for r in claim["status"]["reservedFor"]]
    owner = claim["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"]) == ("Pod", pod["metadata"]["name"])


UNSATISFIABLE = [
    pytest.param(
        make_exactly(selectors=[attribute_is("productName", "NVIDIA B200")]),
        id="a product no node has",
    ),
    pytest.param(
        make_exactly(count=1 + max(g.gpus_per_node for g in fleet.FLEET)),
        id="more GPUs than any node has",
    ),
    pytest.param(
        make_exactly(
            selectors=[attribute_is("productName", L4_PRODUCT)],
            capacity={"requests": {"memory": f"{fleet.L4.memory_gib + 1}Gi"}},
        ),
        id="more memory than an L4 has",
    ),
]


@pytest.mark.parametrize("exactly", UNSATISFIABLE)
def test_a_claim_that_cannot_be_satisfied_leaves_the_pod_pending_with_the_schedulers_message(
    exactly: Obj, kubectl: Kubectl, namespace: str, wait_for: WaitFor
) -> None:
    apply(kubectl, make_claim("impossible", namespace, exactly), make_pod("p", namespace, claim="impossible"))

    pod = wait_for(
        lambda: get(kubectl, "pod", "p", namespace),
        is_unschedulable,
        timeout=90,
        message="PodScheduled=False/Unschedulable",
    )

    message = condition(pod, "PodScheduled")["message"]
    assert "cannot allocate all claims" in message, message
    assert pod["status"]["phase"] == "Pending"
    assert "nodeName" not in pod["spec"]
    assert not allocation(get(kubectl, "resourceclaim", "impossible", namespace))


def free_l4(kubectl: Kubectl) -> Device | None:
    held = held_devices(kubectl)
    free = [
        d
        for key, d in sorted(declared_devices().items())
        if d.attributes["productName"] == L4_PRODUCT and key not in held
    ]
    return free[0] if free else None


def test_two_claims_share_an_l4s_memory_and_a_third_waits_for_what_is_left(
    kubectl: Kubectl, namespace: str, wait_for: WaitFor
) -> None:
    l4 = wait_for(lambda: free_l4(kubectl), bool, timeout=120, message="an L4 nobody holds")
    half = f"{fleet.L4.memory_gib // 2}Gi"
    this_l4 = make_exactly(
        selectors=[attribute_is("uuid", l4.attributes["uuid"])], capacity={"requests": {"memory": half}}
    )
    for name in ("a", "b"):
        apply(kubectl, make_claim(name, namespace, this_l4), make_pod(name, namespace, claim=name))
    claims = [
        wait_for(
            lambda n=name: get(kubectl, "resourceclaim", n, namespace),
            lambda c: bool(allocated_results(c)),
            timeout=90,
            message=f"claim {name} to be allocated",
        )
        for name in ("a", "b")
    ]

    results = [allocated_results(c)[0] for c in claims]
    assert {(r["pool"], r["device"]) for r in results} == {(l4.pool, l4.name)}
    assert [r["consumedCapacity"]["memory"] for r in results] == [half, half]
    assert results[0]["shareID"] != results[1]["shareID"]

    apply(kubectl, make_claim("c", namespace, this_l4), make_pod("c", namespace, claim="c"))
    pod_c = wait_for(
        lambda: get(kubectl, "pod", "c", namespace),
        is_unschedulable,
        timeout=90,
        message="the third pod to be Unschedulable",
    )
    assert "cannot allocate all claims" in condition(pod_c, "PodScheduled")["message"]
    assert not allocation(get(kubectl, "resourceclaim", "c", namespace))

    # The refusal was the memory: once claim a releases its half, c gets it on the same device.
    kubectl("delete", "pod", "a", "-n", namespace, "--wait=false")
    kubectl("delete", "resourceclaim", "a", "-n", namespace, "--wait=false")
    claim_c = wait_for(
        lambda: get(kubectl, "resourceclaim", "c", namespace),
        lambda c: bool(allocated_results(c)),
        timeout=120,
        message="claim c to be allocated once claim a is gone",
    )
    (result_c,) = allocated_results(claim_c)
    assert (result_c["pool"], result_c["device"], result_c["consumedCapacity"]["memory"]) == (
        l4.pool,
        l4.name,
        half,
    )


MIG_PROFILES = sorted({profile for profile, _ in fleet.A100_MIG_LAYOUT})


@pytest.mark.parametrize("profile", MIG_PROFILES)
def test_a_mig_device_is_allocated_through_the_mig_class_by_profile(
    profile: str, kubectl: Kubectl, namespace: str, wait_for: WaitFor
) -> None:
    mig_nodes = {f"{g.prefix}-{i}" for g in fleet.FLEET if g.mig for i in range(g.count)}
    # Tests that share the fleet may cordon the MIG node for a while (the e2e reason tests do).
    wait_for(
        lambda: [get(kubectl, "node", n) for n in sorted(mig_nodes)],
        lambda nodes: any(not n["spec"].get("unschedulable") for n in nodes),
        timeout=300,
        message="a MIG node that is not cordoned",
    )
    exactly = make_exactly("mig.nvidia.com", selectors=[attribute_is("profile", profile)])
    apply(kubectl, make_claim("mig", namespace, exactly), make_pod("p", namespace, claim="mig"))

    claim = wait_for(
        lambda: get(kubectl, "resourceclaim", "mig", namespace),
        lambda c: bool(allocated_results(c)),
        timeout=120,
        message=f"a {profile} MIG device to be allocated",
    )

    (result,) = allocated_results(claim)
    device = declared_devices()[(result["pool"], result["device"])]
    assert (device.attributes["type"], device.attributes["profile"]) == ("mig", profile)
    assert allocated_node(claim) == device.node
    assert device.node in mig_nodes
    pod = wait_for(
        lambda: get(kubectl, "pod", "p", namespace), is_running, timeout=90, message="the pod to run"
    )
    assert pod["spec"]["nodeName"] == device.node


# --- garbage collection -----------------------------------------------------------------------


@pytest.mark.parametrize("propagation", ["background", "foreground"])
def test_deleting_an_owner_configmap_deletes_the_configmap_it_owns(
    propagation: str, kubectl: Kubectl, namespace: str, wait_for: WaitFor
) -> None:
    apply(
        kubectl,
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "owner", "namespace": namespace}},
    )
    owner = get(kubectl, "configmap", "owner", namespace)
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner["metadata"]["uid"]}
    owned = {"name": "owned", "namespace": namespace, "ownerReferences": [ref]}
    apply(kubectl, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": owned})
    assert (
        get(kubectl, "configmap", "owned", namespace)["metadata"]["ownerReferences"][0]["uid"] == ref["uid"]
    )

    kubectl("delete", "configmap", "owner", "-n", namespace, f"--cascade={propagation}", "--wait=false")

    wait_for(
        lambda: gone(kubectl, "configmap", "owned", namespace),
        bool,
        timeout=90,
        message="the garbage collector to delete the owned ConfigMap",
    )
    wait_for(
        lambda: gone(kubectl, "configmap", "owner", namespace),
        bool,
        timeout=90,
        message="the owner to be gone",
    )


def test_deleting_a_deployment_deletes_its_replicaset_and_pods(
    kubectl: Kubectl, namespace: str, wait_for: WaitFor
) -> None:
    apply(kubectl, make_deployment("web", namespace, replicas=2))
    wait_for(
        lambda: items(kubectl, "pods", "-l", "app=web", namespace=namespace),
        lambda pods: len(pods) == 2 and all(is_running(p) for p in pods),
        timeout=90,
        message="two Running pods",
    )
    (rs,) = items(kubectl, "replicasets", "-l", "app=web", namespace=namespace)
    assert rs["metadata"]["ownerReferences"][0]["name"] == "web"

    kubectl("delete", "deployment", "web", "-n", namespace, "--wait=false")

    wait_for(
        lambda: (
            items(kubectl, "replicasets", "-l", "app=web", namespace=namespace)
            + items(kubectl, "pods", "-l", "app=web", namespace=namespace)
        ),
        lambda left: not left,
        timeout=90,
        message="the ReplicaSet and its pods to be garbage-collected",
    )


# --- autoscaling, priority and preemption ------------------------------------------------------


def test_a_horizontal_pod_autoscaler_is_accepted_and_scales_its_deployment_to_min_replicas(
    kubectl: Kubectl, namespace: str, wait_for: WaitFor
) -> None:
    hpa: Obj = {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web", "namespace": namespace},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "minReplicas": 2,
            "maxReplicas": 3,
            "metrics": [
                {
                    "type": "Resource",
                    "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}},
                }
            ],
        },
    }
    apply(kubectl, make_deployment("web", namespace, replicas=1), hpa)

    # No metrics server runs here, but the HPA controller raises replicas below minReplicas anyway.
    deployment = wait_for(
        lambda: get(kubectl, "deployment", "web", namespace),
        lambda d: d["spec"]["replicas"] == 2 and d.get("status", {}).get("readyReplicas") == 2,
        timeout=90,
        message="the HPA controller to scale the Deployment to minReplicas",
    )
    assert deployment["spec"]["replicas"] == hpa["spec"]["minReplicas"]
    status = get(kubectl, "hpa", "web", namespace)["status"]
    assert status["desiredReplicas"] == 2
    assert condition({"status": status}, "AbleToScale")["status"] == "True"


@pytest.fixture
def private_node(kubectl: Kubectl, wait_for: WaitFor) -> Iterator[str]:
    """A KWOK node with 4 cpus and a taint of its own: only pods that tolerate it land there."""
    name = f"bed-{uuid.uuid4().hex[:8]}"
    resources = {"cpu": "4", "memory": "8Gi", "pods": "10"}
    apply(
        kubectl,
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": name,
                "labels": {"kubernetes.io/hostname": name, "type": "kwok", "inference.local/bed": name},
                "annotations": dict(fleet.FAKE_NODE_ANNOTATION),
            },
            "spec": {"taints": [{"key": "inference.local/bed", "value": name, "effect": "NoSchedule"}]},
            "status": {"allocatable": resources, "capacity": resources},
        },
    )
    try:
        wait_for(
            lambda: get(kubectl, "node", name),
            lambda n: (
                condition(n, "Ready").get("status") == "True"
                and all(t["key"] == "inference.local/bed" for t in n["spec"].get("taints", []))
            ),
            timeout=90,
            message=f"KWOK to make node {name} Ready",
        )
        yield name
    finally:
        kubectl("delete", "node", name, "--wait=false", check=False)


@pytest.fixture
def priority_classes(kubectl: Kubectl) -> Iterator[dict[str, str]]:
    """Two PriorityClasses with unique names, ``low`` (100) and ``high`` (1,000,000); deleted after."""
    suffix = uuid.uuid4().hex[:8]
    names = {"low": f"bed-low-{suffix}", "high": f"bed-high-{suffix}"}
    values = {"low": 100, "high": 1_000_000}
    apply(
        kubectl,
        *(
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": names[k]},
                "value": values[k],
                "preemptionPolicy": "PreemptLowerPriority",
            }
            for k in names
        ),
    )
    try:
        yield names
    finally:
        kubectl("delete", "priorityclass", *names.values(), "--ignore-not-found", check=False)


def test_a_high_priority_pod_preempts_a_low_priority_pod_on_a_full_node(
    kubectl: Kubectl,
    namespace: str,
    wait_for: WaitFor,
    private_node: str,
    priority_classes: dict[str, str],
) -> None:
    def pod_on_the_node(name: str, priority: str) -> Obj:
        return make_pod(
            name,
            namespace,
            priorityClassName=priority_classes[priority],
            nodeSelector={"inference.local/bed": private_node},
            tolerations=[{"key": "inference.local/bed", "operator": "Exists", "effect": "NoSchedule"}],
            containers=[{"name": "main", "image": PAUSE, "resources": {"requests": {"cpu": "3"}}}],
        )

    apply(kubectl, pod_on_the_node("low", "low"))
    low = wait_for(
        lambda: get(kubectl, "pod", "low", namespace), is_running, timeout=90, message="low Running"
    )
    assert low["spec"]["nodeName"] == private_node
    assert low["spec"]["priority"] == 100

    apply(kubectl, pod_on_the_node("high", "high"))

    high = wait_for(
        lambda: get(kubectl, "pod", "high", namespace),
        is_running,
        timeout=120,
        message="the high-priority pod to preempt and run",
    )
    assert high["spec"]["nodeName"] == private_node
    assert high["spec"]["priority"] == 1_000_000
    res = kubectl("get", "pod", "low", "-n", namespace, "-o", "json", "--ignore-not-found")
    assert not res.stdout.strip() or json.loads(res.stdout)["metadata"].get("deletionTimestamp")
    events = items(
        kubectl, "events", "--field-selector", "involvedObject.name=low,reason=Preempted", namespace=namespace
    )
    assert events, "no Preempted event for the low-priority pod"
    assert high["metadata"]["uid"] in events[0]["message"], events[0]["message"]


# --- the build and the launcher ----------------------------------------------------------------


def test_kubectl_version_reports_the_pinned_server_version(kubectl: Kubectl) -> None:
    out = json.loads(kubectl("version", "-o", "json").stdout)

    pinned = config.versions()["KUBE_VERSION"]
    assert out["serverVersion"]["gitVersion"] == pinned
    assert out["clientVersion"]["gitVersion"] == pinned
    assert out["serverVersion"]["minor"] == pinned.split(".")[1]


def test_a_second_up_is_a_no_op_that_keeps_the_same_processes(kubectl: Kubectl) -> None:
    def pids() -> dict[str, int]:
        return {c: int((config.P.pids / c).read_text()) for c in launcher.COMPONENTS}

    before = pids()

    res = subprocess.run(
        [sys.executable, "-m", "devtools.cluster", "up"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )

    assert res.returncode == 0, res.stderr
    assert "control plane already running" in res.stderr
    assert pids() == before
    for pid in before.values():
        os.kill(pid, 0)  # raises if the process is gone
    assert launcher.api_ready()
    assert json.loads(kubectl("version", "-o", "json").stdout)["serverVersion"]["gitVersion"]
