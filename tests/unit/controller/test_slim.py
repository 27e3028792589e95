"""What the informers keep of each watched object (``controller.caching.slim``): nothing a reader uses is
dropped. The live objects are a Pod, a ResourceClaim and a Deployment read from the scale
benchmark's plane (``live_objects.json``), managedFields included."""

from __future__ import annotations

import copy
import json
import pathlib
from typing import Any

import pytest

from controller import kinds, wiring
from controller.caching import slim
from controller.kinds import Cache
from controller.kube.client import resource_for
from controller.kube.informer import Informer
from controller.live import group_status, progress
from controller.live import workload as readings
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


def test_every_watched_kind_has_a_transform_and_only_pods_claims_and_secrets_are_cut_down() -> None:
    cut = {k.kind for k in kinds.KINDS if k.transform is not slim.whole}
    assert cut == {"Pod", "ResourceClaim", "Secret", "Namespace"}


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


def waiting(deployment: Obj) -> Obj:
    """The live Deployment before its replica is available: its verdict then reads the pods."""
    deployment["status"] = {"observedGeneration": 1, "replicas": 1, "updatedReplicas": 1}
    return deployment


def in_group(pod: Obj) -> tuple[Obj, Obj]:
    """The pod as the leader of a one-pod LeaderWorkerSet group that LWS counts ready."""
    grouped = copy.deepcopy(pod)
    grouped["metadata"]["name"] = "set-0"
    grouped["metadata"]["labels"][group_status.SET_NAME_LABEL] = "set"
    lws = {
        "metadata": {"name": "set"},
        "spec": {"replicas": 1, "leaderWorkerTemplate": {"size": 1}},
        "status": {"readyReplicas": 1},
    }
    return grouped, lws


# What each reading gives on the full pod of each variant (reason of the workload and group
# verdicts; whether the pod is unschedulable, stuck on its claims, fetching): each differs between
# variants, so a transform that loses what one reading needs shows in at least one variant.
EXPECTED = {
    "ready": ("Progressing", "Available", False, False, False),
    "unschedulable": ("Unschedulable", "Progressing", True, True, False),
    "fetching": ("Progressing", "Available", False, False, True),
}


@pytest.mark.parametrize(
    ("name", "variant"),
    [("ready", lambda p: p), ("unschedulable", unschedulable), ("fetching", fetching)],
    ids=["ready", "unschedulable", "fetching"],
)
def test_a_pod_reads_the_same_after_the_transform(name: str, variant: Any) -> None:
    full = variant(live("Pod"))
    pod = slim.pod(full)
    deployment = waiting(live("Deployment"))
    template = full["spec"]["resourceClaims"][0]["resourceClaimTemplateName"]
    grouped, lws = in_group(full)

    verdict = readings.workload_verdict(deployment, [full])
    group = group_status.group_verdict(lws, [grouped])
    stuck = readings.claim_stuck_since(deployment, [full], template=template)
    unscheduled = readings.unschedulable_pods([full])
    fetcher = progress.fetching_pod([full])
    seen = (verdict.reason, group.reason, bool(unscheduled), stuck is not None, fetcher is not None)
    assert seen == EXPECTED[name]

    assert readings.workload_verdict(deployment, [pod]) == verdict
    assert group_status.group_verdict(lws, [slim.pod(grouped)]) == group
    assert readings.claim_stuck_since(deployment, [pod], template=template) == stuck
    assert readings.unschedulable_pods([pod]) == unscheduled
    assert progress.fetching_pod([pod]) == fetcher
    assert readings.uses_claim_template(pod, template) and readings.uses_claim_template(full, template)
    assert readings.own_claim_names([pod]) == readings.own_claim_names([full]) != set()
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
    assert claim["status"] == {
        k: full["status"][k] for k in ("allocation", "reservedFor") if k in full["status"]
    }
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


# ------------------------------------------------------------------ Secrets (issue 21, item 9)


def labelled_secret(name: str, size: int, **meta: Any) -> Obj:
    """A Secret any namespace member can make: the order's label, ``size`` bytes of data."""
    import base64
    import os

    blob = base64.b64encode(os.urandom(size)).decode()  # each its own: interning shares nothing
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": name,
            "namespace": "team-a",
            "uid": f"uid-{name}",
            "resourceVersion": "1",
            "labels": {names.LABEL_ORDER: "web", "big": "x" * 63},
            "annotations": {"kubectl.kubernetes.io/last-applied-configuration": blob[:100_000], **meta},
        },
        "type": "Opaque",
        "data": {"payload": blob, names.AUTH_TOKEN_KEY: blob},
    }


def test_a_secret_keeps_only_what_the_auth_reading_and_the_name_check_read() -> None:
    from controller.live import takeover
    from controller.live.auth_token import read_auth
    from tests.unit.controller.builders import make_order

    big = slim.secret(labelled_secret("web-auth", 1 << 20))
    assert "data" not in big  # a token of a MiB is no token: dropped, the order mints its own
    assert big["metadata"]["labels"] == {names.LABEL_ORDER: "web"}
    assert "annotations" not in big
    minted = labelled_secret("web-auth", 0)
    minted["data"] = {names.AUTH_TOKEN_KEY: "dG9rZW4=", "other": "eA=="}
    minted["metadata"]["ownerReferences"] = [
        {"kind": "InferenceService", "name": "web", "uid": "o-1", "controller": True}
    ]
    kept = slim.secret(minted)
    assert kept["data"] == {names.AUTH_TOKEN_KEY: "dG9rZW4="}
    assert read_auth(kept, "o-1") == read_auth(minted, "o-1") and read_auth(kept, "o-1").token == "token"
    assert read_auth(kept, "o-2") == read_auth(minted, "o-2")
    tls = labelled_secret("web-tls", 10, **{takeover.CERT_MANAGER_CERTIFICATE: "web-tls"})
    order = make_order(metadata={"name": "web", "namespace": "team-a"})
    assert takeover.is_own(slim.secret(tls), order, "Secret") and takeover.is_own(tls, order, "Secret")
    assert "data" not in slim.secret(tls)  # not an -auth Secret: no data at all
    many = labelled_secret("web-auth", 0)
    many["metadata"]["ownerReferences"] = [
        {"kind": "InferenceService", "name": "web", "uid": "u-0", "controller": True},
        *({"kind": "ConfigMap", "name": f"c{i}", "uid": f"c{i}"} for i in range(1000)),
    ]
    cut = slim.secret(many)
    assert len(cut["metadata"]["ownerReferences"]) == slim.SECRET_OWNERS + 1
    assert takeover.is_own(cut, order, "Secret") is takeover.is_own(many, order, "Secret") is False


def cached_bytes(transform: slim.Transform, count: int, size: int) -> int:
    """What the Secret informer's cache holds after ``count`` labelled Secrets of ``size`` bytes
    arrive as watch events (tracemalloc: bytes still allocated once the events are gone)."""
    import gc
    import tracemalloc

    inf = Informer(None, resource_for("v1", "Secret"), handler=lambda e, o, old: None, transform=transform)
    lines = [
        json.dumps({"type": "ADDED", "object": labelled_secret(f"s-{i}", size)}).encode()
        for i in range(count)
    ]
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for i in range(count):
            inf._handle_line(lines[i])
            lines[i] = b""
        gc.collect()
        return tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()


def test_many_labelled_one_mib_secrets_cost_the_cache_little() -> None:
    whole = cached_bytes(slim.whole, 20, 1 << 20)
    slimmed = cached_bytes(kinds.BY_CACHE[Cache.SECRETS].transform, 20, 1 << 20)
    print(f"20 labelled 1 MiB Secrets: cache {whole / 2**20:.1f} MiB whole, {slimmed / 2**10:.1f} KiB slim")
    assert whole > 20 * (1 << 20)
    assert slimmed < 20 * 2048  # under 2 KiB a Secret
