"""What the informers keep of each watched object (``controller.slim``): nothing a reader uses is
dropped. The live objects are a Pod, a ResourceClaim and a Deployment read from the scale
benchmark's plane (``live_objects.json``), managedFields included."""

from __future__ import annotations

import copy
import json
import pathlib
from typing import Any

import pytest

from controller import group_status, kinds, progress, readings, slim, wiring
from controller.kinds import Cache
from controller.kube.client import resource_for
from controller.kube.informer import Informer
from controller.planner.claims import read_claim
from controller.planner.slices import parse_slice
from controller.planner.uses import claim_use
from shared import names

Obj = dict[str, Any]
LIVE: dict[str, Obj] = json.loads((pathlib.Path(__file__).parent / "live_objects.json").read_text())


def live(kind: str) -> Obj:
    return copy.deepcopy(LIVE[kind])


def without_managed_fields(obj: Obj) -> Obj:
    out = copy.deepcopy(obj)
    del out["metadata"]["managedFields"]
    return out


@pytest.mark.parametrize("kind", sorted(LIVE))
def test_every_transform_drops_managed_fields_and_leaves_its_input_alone(kind: str) -> None:
    obj = live(kind)
    assert obj["metadata"]["managedFields"]
    slimmed = kinds.BY_KIND[kind].transform(obj)
    assert "managedFields" not in slimmed["metadata"]
    assert slimmed["metadata"] == without_managed_fields(obj)["metadata"]
    assert obj == LIVE[kind]


def test_every_watched_kind_has_a_transform_and_only_pods_and_claims_are_cut_down() -> None:
    cut = {k.kind for k in kinds.KINDS if k.transform is not slim.whole}
    assert cut == {"Pod", "ResourceClaim", "Namespace"}


def test_a_slice_parses_to_the_same_devices_and_counters() -> None:
    full = live("ResourceSlice")
    assert parse_slice(slim.whole(full), {}, {}) == parse_slice(full, {}, {})


def test_a_deployment_keeps_its_whole_body_for_drift_and_readings() -> None:
    obj = live("Deployment")
    assert slim.whole(obj) == without_managed_fields(obj)


def test_strings_are_shared_between_objects_decoded_apart() -> None:
    a, b = slim.whole(live("Deployment")), slim.whole(live("Deployment"))
    script_a = a["spec"]["template"]["spec"]["initContainers"][0]["command"][-1]
    script_b = b["spec"]["template"]["spec"]["initContainers"][0]["command"][-1]
    assert script_a == script_b and script_a is script_b
    key_a = next(k for k in a["spec"] if k == "template")
    key_b = next(k for k in b["spec"] if k == "template")
    assert key_a is key_b


def test_interned_copies_json_of_every_type() -> None:
    value = {"a": [1, 2.5, True, None, "x", {"b": "y"}]}
    out = slim.interned(value)
    assert out == value and out is not value and out["a"] is not value["a"]


def unschedulable(pod: Obj) -> Obj:
    pod["status"]["conditions"] = [
        {
            "type": "PodScheduled",
            "status": "False",
            "reason": "Unschedulable",
            "lastTransitionTime": "2026-12-01T19:52:15Z",
            "message": "0/8 nodes are available: 8 cannot allocate all claims.",
        }
    ]
    pod["status"]["phase"] = "Pending"
    return pod


def fetching(pod: Obj) -> Obj:
    pod["status"]["initContainerStatuses"][0]["state"] = {"running": {"startedAt": "2026-12-01T19:52:20Z"}}
    return pod


@pytest.mark.parametrize(
    "variant", [lambda p: p, unschedulable, fetching], ids=["ready", "unschedulable", "fetching"]
)
def test_a_pod_reads_the_same_after_the_transform(variant: Any) -> None:
    full = variant(live("Pod"))
    pod = slim.pod(full)
    deployment = live("Deployment")
    template = full["spec"]["resourceClaims"][0]["resourceClaimTemplateName"]
    assert readings.unschedulable_pods([pod]) == readings.unschedulable_pods([full])
    assert readings.workload_verdict(deployment, [pod]) == readings.workload_verdict(deployment, [full])
    assert readings.uses_claim_template(pod, template) and readings.uses_claim_template(full, template)
    assert readings.own_claim_names([pod]) == readings.own_claim_names([full]) != set()
    assert readings.claim_stuck_since({"status": {}, "metadata": {}}, [pod], template=template) == (
        readings.claim_stuck_since({"status": {}, "metadata": {}}, [full], template=template)
    )
    assert progress.fetching_pod([pod]) == progress.fetching_pod([full])
    lws = {"metadata": {"name": "x"}, "spec": {"replicas": 1, "leaderWorkerTemplate": {"size": 1}}}
    assert group_status.group_verdict(lws, [pod]) == group_status.group_verdict(lws, [full])
    assert wiring.order_of(pod) == wiring.order_of(full) == full["metadata"]["labels"][names.LABEL_ORDER]


def test_a_pod_keeps_only_the_parts_read() -> None:
    pod = slim.pod(live("Pod"))
    assert set(pod) == {"apiVersion", "kind", "metadata", "spec", "status"}
    assert set(pod["spec"]) == {"resourceClaims"}
    assert set(pod["status"]) == set(slim.POD_STATUS)  # the live pod has each of them


def test_a_pod_without_claims_or_status_stays_readable() -> None:
    pod = slim.pod({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}})
    assert pod == {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "status": {}}
    assert readings.own_claim_names([pod]) == set()
    assert not readings.uses_claim_template(pod, "t")


def test_a_claim_keeps_its_allocation_labels_and_owner() -> None:
    full = live("ResourceClaim")
    claim = slim.resource_claim(full)
    assert set(claim) == {"apiVersion", "kind", "metadata", "spec", "status"}
    assert claim["status"] == {"allocation": full["status"]["allocation"]}
    assert claim["spec"] == {"devices": full["spec"]["devices"]}  # what it asks: the ledger's shape_of
    assert read_claim(claim, {}) == read_claim(full, {})
    parsed = parse_slice(slim.whole(live("ResourceSlice")), {}, {})  # the slice of the claim's device
    assert not isinstance(parsed, str)
    for known in ({}, {d.key: d for d in parsed[0]}):
        assert claim_use(claim, known) == claim_use(full, known)
    assert claim_use(claim, {d.key: d for d in parsed[0]}).keys
    assert wiring.order_of(claim) == wiring.order_of(full) is not None
    assert claim["metadata"]["ownerReferences"] == full["metadata"]["ownerReferences"]


def test_an_unallocated_claim_reads_as_unallocated() -> None:
    full = live("ResourceClaim")
    del full["status"]
    claim = slim.resource_claim(full)
    assert claim["status"] == {}
    assert not ((claim.get("status") or {}).get("allocation"))


def test_the_informer_caches_and_hands_on_the_transformed_object() -> None:
    seen: list[tuple[str, Obj]] = []
    inf = Informer(
        None,
        resource_for("v1", "Pod"),
        handler=lambda event, obj, old: seen.append((event, obj)),
        transform=kinds.BY_CACHE[Cache.PODS].transform,
    )
    obj = live("Pod")
    del obj["apiVersion"], obj["kind"]  # a watch event's object may omit them
    inf._handle_line(json.dumps({"type": "ADDED", "object": obj}).encode())
    cached = inf.get(obj["metadata"]["namespace"], obj["metadata"]["name"])
    assert cached is not None and seen == [("ADDED", cached)]
    assert cached["kind"] == "Pod" and cached["apiVersion"] == "v1"
    assert "managedFields" not in cached["metadata"] and set(cached["spec"]) == {"resourceClaims"}
