"""Multi-node serving on the real plane, with the real LeaderWorkerSet controller and scheduler.

A class with ``placement.maxNodesPerReplica: 2``; an order for Llama-3.1-405B-Instruct in BF16
(about 812 GB of weights), which no 8 x H100 80GB node holds. Checked: it is planned as 2 nodes x 8
H100 (MultiNode) and rendered as a LeaderWorkerSet of size 2 owned by the order, with no
Deployment; the real scheduler places the leader and the worker on the two H100 nodes with their
claims allocated; the group's NetworkPolicy selects exactly the labels LWS put on its pods and the pods carry Ray's
token settings; the order reaches Ready through the leader-only Service; killing the worker makes
the order not-Ready with a message naming it, and LWS's group restart makes it Ready again;
deleting the order removes the group and its NetworkPolicy.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from devtools.cluster import fleet
from devtools.cluster.components.lws_config import SET_NAME_LABEL
from testkit.platform import HF_TOKEN, Platform, hf
from tests.integration.conftest import wait_for
from tests.integration.test_bed import allocated_node, allocated_results, condition, items
from tests.integration.test_lws import h100_free

pytestmark = pytest.mark.cluster

MODEL = "meta-llama/Llama-3.1-405B-Instruct"
Obj = dict[str, Any]
H100_NODES = {f"gpu-h100-{i}" for i in range(2)}


def _group_pods(p: Platform, ns: str, set_name: str) -> dict[str, Obj]:
    return {
        pod["metadata"]["name"]: pod
        for pod in items(p.kubectl, "pods", "-l", f"{SET_NAME_LABEL}={set_name}", namespace=ns)
    }


def _running(pods: dict[str, Obj], names: set[str]) -> bool:
    return set(pods) == names and all(
        (pod.get("status") or {}).get("phase") == "Running"
        and condition(pod, "Ready").get("status") == "True"
        and not pod["metadata"].get("deletionTimestamp")
        for pod in pods.values()
    )


def test_a_405b_order_runs_as_a_two_node_group_is_ready_only_whole_and_goes_with_the_order(
    platform: Platform, ns: str
) -> None:
    p = platform
    wait_for(lambda: h100_free(p.kubectl), bool, timeout=180, message="both H100 nodes free")
    klass = p.create_class(
        {
            "placement": {
                "deviceClassNames": ["gpu.nvidia.com"],
                "sharingModes": ["Exclusive"],
                "maxNodesPerReplica": 2,
            }
        },
        prefix="mn",
    )
    p.kubectl("create", "secret", "generic", "hf-token", "-n", ns, f"--from-literal=token={HF_TOKEN}")
    started = time.monotonic()
    p.create_order(ns, "big", hf(MODEL, authSecretRef={"name": "hf-token"}), klass=klass)

    obj = p.wait_phase(ns, "big", "Ready", timeout=240)
    ready_after = time.monotonic() - started
    res = obj["status"]["resolved"]
    assert res["placementMode"] == "MultiNode"
    assert res["nodeCount"] == 2
    assert res["acceleratorsPerNode"] == 8
    assert res["acceleratorCount"] == 16
    assert res["acceleratorProductName"] == fleet.H100.product
    assert "2 nodes x 8" in p.condition(obj, "Planned")["message"]

    # The workload is a LeaderWorkerSet owned by the order, and no Deployment or HPA.
    group = p.get("leaderworkerset", "big-group", ns)
    assert group is not None
    (ref,) = group["metadata"]["ownerReferences"]
    assert ref["kind"] == "InferenceService" and ref["name"] == "big" and ref["controller"] is True
    assert group["spec"]["leaderWorkerTemplate"]["size"] == 2
    assert p.get("deployment", "big", ns) is None
    assert p.get("hpa", "big", ns) is None
    assert p.get("scaledobjects.keda.sh", "big", ns) is None
    svc = p.get("service", "big", ns)
    assert svc is not None
    assert svc["spec"]["selector"]["leaderworkerset.sigs.k8s.io/worker-index"] == "0"

    # Scheduled by the real scheduler on both H100 nodes, each pod with its own allocated claim.
    leader, worker = "big-group-0", "big-group-0-1"
    pods = _group_pods(p, ns, "big-group")
    assert _running(pods, {leader, worker})
    nodes = set()
    for pod in pods.values():
        (status,) = pod["status"]["resourceClaimStatuses"]
        claim = p.get("resourceclaim", status["resourceClaimName"], ns)
        assert claim is not None
        assert len(allocated_results(claim)) == 8
        assert allocated_node(claim) == pod["spec"]["nodeName"]
        nodes.add(pod["spec"]["nodeName"])
    assert nodes == H100_NODES
    args = pods[leader]["spec"]["containers"][0]["args"]
    assert args[args.index("--tensor-parallel-size") + 1] == "8"
    assert args[args.index("--pipeline-parallel-size") + 1] == "2"
    assert "ray" in pods[worker]["spec"]["containers"][0]["command"][-1]

    # Ray is fenced to the group: one NetworkPolicy owned by the order, whose selector is the labels
    # the real LWS put on both pods (not enforced here: the local plane has no network plugin).
    policy = p.get("networkpolicy", "big-group-0", ns)
    assert policy is not None
    (ref,) = policy["metadata"]["ownerReferences"]
    assert ref["kind"] == "InferenceService" and ref["name"] == "big" and ref["controller"] is True
    selected = policy["spec"]["podSelector"]["matchLabels"]
    for pod in pods.values():
        labels = pod["metadata"]["labels"]
        assert {k: labels.get(k) for k in selected} == selected, f"{pod['metadata']['name']} not selected"
    (peers, _) = policy["spec"]["ingress"]
    assert peers["from"] == [{"podSelector": {"matchLabels": selected}}]
    env = {e["name"]: e for e in pods[worker]["spec"]["containers"][0]["env"]}
    assert env["RAY_AUTH_MODE"]["value"] == "token"
    assert env["RAY_AUTH_TOKEN"]["valueFrom"]["secretKeyRef"]["name"] == "big-auth"

    # A lost worker: not Ready, naming it; LWS recreates the group and the order is Ready again.
    lost_at = time.monotonic()
    p.kubectl("delete", "pod", worker, "-n", ns, "--wait=false")
    down = wait_for(
        lambda: p.order(ns, "big"),
        lambda o: p.condition(o, "WorkloadReady").get("status") == "False",
        timeout=60,
        message="the order not-Ready after its worker was deleted",
    )
    not_ready_after = time.monotonic() - lost_at
    assert (
        worker in p.condition(down, "WorkloadReady")["message"]
        or leader in (p.condition(down, "WorkloadReady")["message"])
    )
    assert p.condition(down, "Ready")["status"] == "False"
    p.wait_phase(ns, "big", "Ready", timeout=180)
    back_after = time.monotonic() - lost_at

    # Deleting the order removes the group (the garbage collector, through the ownerReference).
    deleted_at = time.monotonic()
    p.kubectl("delete", "inferenceservice", "big", "-n", ns, "--wait=true", "--timeout=120s", timeout=140)
    wait_for(
        lambda: (
            p.get("leaderworkerset", "big-group", ns),
            _group_pods(p, ns, "big-group"),
            p.get("networkpolicy", "big-group-0", ns),
        ),
        lambda got: got[0] is None and not got[1] and got[2] is None,
        timeout=180,
        message="the LeaderWorkerSet, its pods and its NetworkPolicy gone",
    )
    print(
        f"multi-node timings: Ready {ready_after:.1f}s; not-Ready {not_ready_after:.1f}s after the worker was "
        f"deleted, Ready again {back_after:.1f}s; group gone {time.monotonic() - deleted_at:.1f}s after delete"
    )


def _kinds(p: Platform, ns: str) -> set[str]:
    out = p.kubectl(
        "get", "deployment,hpa,scaledobjects.keda.sh,leaderworkerset,networkpolicy", "-n", ns, "-o", "json"
    ).stdout
    return {
        i["kind"]
        for i in json.loads(out)["items"]
        if not i["metadata"].get("deletionTimestamp")
        and any(r.get("kind") == "InferenceService" for r in i["metadata"].get("ownerReferences", []))
    }


def test_an_edit_between_single_node_and_multi_node_replaces_the_workload_kind(
    platform: Platform, ns: str
) -> None:
    p = platform
    wait_for(lambda: h100_free(p.kubectl), bool, timeout=180, message="both H100 nodes free")
    klass = p.create_class(
        {"placement": {"deviceClassNames": ["gpu.nvidia.com"], "maxNodesPerReplica": 2}}, prefix="mn"
    )
    p.kubectl("create", "secret", "generic", "hf-token", "-n", ns, f"--from-literal=token={HF_TOKEN}")
    small = hf("Qwen/Qwen2.5-32B-Instruct-AWQ")
    p.create_order(ns, "edit", small, klass=klass)
    p.wait_phase(ns, "edit", "Ready", timeout=120)
    assert _kinds(p, ns) == {"Deployment", "ScaledObject"}

    p.create_order(ns, "edit", hf(MODEL, authSecretRef={"name": "hf-token"}), klass=klass)
    obj = wait_for(
        lambda: p.order(ns, "edit"),
        lambda o: (
            o["status"].get("observedGeneration") == o["metadata"]["generation"] == 2
            and o["status"].get("phase") == "Ready"
            and o["status"]["resolved"].get("placementMode") == "MultiNode"
        ),
        timeout=240,
        message="the order Ready as MultiNode after the edit",
    )
    assert obj["status"]["resolved"]["replanCount"] == 1
    wait_for(
        lambda: _kinds(p, ns),
        lambda k: k == {"LeaderWorkerSet", "NetworkPolicy"},
        timeout=60,
        message="only the LWS and its group's NetworkPolicy",
    )

    p.create_order(ns, "edit", small, klass=klass)
    wait_for(
        lambda: p.order(ns, "edit"),
        lambda o: (
            o["status"].get("observedGeneration") == o["metadata"]["generation"] == 3
            and o["status"].get("phase") == "Ready"
            and o["status"]["resolved"].get("placementMode") != "MultiNode"
        ),
        timeout=180,
        message="the order Ready on one node again",
    )
    wait_for(
        lambda: _kinds(p, ns),
        lambda k: k == {"Deployment", "ScaledObject"},
        timeout=60,
        message="the LWS and its NetworkPolicy pruned, a Deployment and ScaledObject again",
    )
