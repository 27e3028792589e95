"""LeaderWorkerSet on the real plane: the real LWS controller and webhooks, the real scheduler with DRA.

One group of size 2 (a leader and one worker), each pod taking a whole H100 node (8 GPUs) through its
own ResourceClaimTemplate, as a 405B BF16 replica does on the default fleet's 2x8 H100. Checked: both
pods are scheduled on the two H100 nodes with allocated claims and run; LWS labelled them and injected
its env vars; the LWS reports the group ready; a deleted worker makes LWS recreate the whole group;
deleting the LWS removes its pods and their claims.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from devtools.cluster import fleet
from devtools.cluster.components import lws as lws_plane
from devtools.cluster.components.lws_config import SET_NAME_LABEL
from devtools.cluster.handle import Kubectl
from tests.integration.lws_fixture import lws  # noqa: F401
from tests.integration.test_bed import (
    allocated_node,
    allocated_results,
    apply,
    condition,
    declared_devices,
    get,
    held_devices,
    is_running,
    items,
    make_exactly,
    make_pod_spec,
)

pytestmark = pytest.mark.cluster

Obj = dict[str, Any]
WaitFor = Callable[..., Any]
NAME_LABEL = SET_NAME_LABEL
H100_NODES = {f"gpu-h100-{i}" for i in range(2)}


# --- builders ---------------------------------------------------------------------------------


def make_gpu_template(name: str, namespace: str, *, count: int = 8) -> Obj:
    """``count`` H100 GPUs of one node."""
    exactly = make_exactly(
        count=count,
        selectors=[
            {
                "cel": {
                    "expression": f'device.attributes["{fleet.DRIVER}"].productName == "{fleet.H100.product}"'
                }
            }
        ],
    )
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}}},
    }


def make_pod_template(role: str, claim_template: str) -> Obj:
    # A grace period above zero: LWS sees the deleted pod (deletionTimestamp) before KWOK removes it.
    spec = make_pod_spec(claim_template=claim_template, terminationGracePeriodSeconds=1)
    return {"metadata": {"labels": {"role": role}}, "spec": spec}


def make_lws(name: str, namespace: str, *, size: int = 2) -> Obj:
    return {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "replicas": 1,
            "leaderWorkerTemplate": {
                "size": size,
                "restartPolicy": "RecreateGroupOnPodRestart",
                "leaderTemplate": make_pod_template("leader", "leader-gpus"),
                "workerTemplate": make_pod_template("worker", "worker-gpus"),
            },
        },
    }


# --- reading the world ------------------------------------------------------------------------


def group_pods(kubectl: Kubectl, name: str, namespace: str) -> dict[str, Obj]:
    return {
        p["metadata"]["name"]: p
        for p in items(kubectl, "pods", "-l", f"{NAME_LABEL}={name}", namespace=namespace)
    }


def env(pod: Obj) -> dict[str, str]:
    (container,) = pod["spec"]["containers"]
    return {e["name"]: e.get("value", "") for e in container.get("env", [])}


def claim_of(kubectl: Kubectl, pod: Obj) -> Obj:
    (status,) = pod["status"]["resourceClaimStatuses"]
    return get(kubectl, "resourceclaim", status["resourceClaimName"], pod["metadata"]["namespace"])


def group_running(pods: dict[str, Obj], names: set[str]) -> bool:
    return set(pods) == names and all(
        is_running(p)
        and condition(p, "Ready").get("status") == "True"
        and not p["metadata"].get("deletionTimestamp")
        for p in pods.values()
    )


def h100_free(kubectl: Kubectl) -> bool:
    """No claim holds an H100 (a previous test's namespace may still be going away)."""
    h100 = {k for k, d in declared_devices().items() if d.node in H100_NODES}
    return not (held_devices(kubectl) & h100)


# --- the test ---------------------------------------------------------------------------------


def test_a_leader_worker_set_of_two_takes_both_h100_nodes_restarts_as_a_group_and_goes_with_its_pods(
    lws: lws_plane.Running,  # noqa: F811
    kubectl: Kubectl,
    namespace: str,
    wait_for: WaitFor,
) -> None:
    wait_for(lambda: h100_free(kubectl), bool, timeout=120, message="both H100 nodes free")
    name = "llm"
    leader, worker = f"{name}-0", f"{name}-0-1"
    apply(
        kubectl,
        make_gpu_template("leader-gpus", namespace),
        make_gpu_template("worker-gpus", namespace),
        make_lws(name, namespace),
    )

    # Scheduled by the real scheduler, with allocated claims, on the two H100 nodes, Running.
    pods = wait_for(
        lambda: group_pods(kubectl, name, namespace),
        lambda ps: group_running(ps, {leader, worker}),
        timeout=120,
        message="the leader and the worker Running and Ready",
    )
    nodes = set()
    for pod in pods.values():
        claim = claim_of(kubectl, pod)
        results = allocated_results(claim)
        assert len(results) == 8 and {r["driver"] for r in results} == {fleet.DRIVER}
        assert allocated_node(claim) == pod["spec"]["nodeName"]
        nodes.add(pod["spec"]["nodeName"])
    assert nodes == H100_NODES

    # LWS's pod webhook labelled the pods and injected the group's address, size and index.
    assert pods[leader]["metadata"]["labels"][SET_NAME_LABEL] == name
    assert pods[leader]["metadata"]["labels"]["leaderworkerset.sigs.k8s.io/worker-index"] == "0"
    assert pods[worker]["metadata"]["labels"]["leaderworkerset.sigs.k8s.io/worker-index"] == "1"
    for pod in pods.values():
        assert pod["metadata"]["labels"]["leaderworkerset.sigs.k8s.io/group-index"] == "0"
    assert env(pods[leader]) == {
        "LWS_LEADER_ADDRESS": f"{name}-0.{name}.{namespace}",
        "LWS_GROUP_SIZE": "2",
        "LWS_WORKER_INDEX": "0",
    }
    assert env(pods[worker])["LWS_WORKER_INDEX"] == "1"
    assert env(pods[worker])["LWS_LEADER_ADDRESS"] == f"{name}-0.{name}.{namespace}"
    # LWS's defaults (its LeaderWorkerSet webhook) and its readiness report.
    obj = wait_for(
        lambda: get(kubectl, "leaderworkerset", name, namespace),
        lambda o: (o.get("status") or {}).get("readyReplicas") == 1,
        timeout=60,
        message="the LeaderWorkerSet reports its group ready",
    )
    assert condition(obj, "Available")["status"] == "True"
    assert obj["spec"]["networkConfig"]["subdomainPolicy"] == "Shared"

    # A lost worker: LWS deletes the leader, so the whole group comes back (new pods, new claims).
    before = {n: p["metadata"]["uid"] for n, p in pods.items()}
    kubectl("delete", "pod", worker, "-n", namespace, "--wait=false")
    pods = wait_for(
        lambda: group_pods(kubectl, name, namespace),
        lambda ps: (
            group_running(ps, {leader, worker})
            and all(ps[n]["metadata"]["uid"] != uid for n, uid in before.items())
        ),
        timeout=120,
        message="the group recreated: a new leader and a new worker Running",
    )
    assert {allocated_node(claim_of(kubectl, p)) for p in pods.values()} == H100_NODES
    events = items(kubectl, "events", "--field-selector", "reason=RecreateGroup", namespace=namespace)
    assert any(worker in str(e.get("message") or e.get("note")) for e in events), events

    # Deleting the LWS removes its pods (and so their claims).
    kubectl("delete", "leaderworkerset", name, "-n", namespace, "--wait=true", "--timeout=60s")
    wait_for(
        lambda: (group_pods(kubectl, name, namespace), items(kubectl, "resourceclaims", namespace=namespace)),
        lambda state: state == ({}, []),
        timeout=60,
        message="no pod and no claim of the group left",
    )
