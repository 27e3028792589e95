"""The pure parts of bench/scale: the order mix, order states, over-commit, metric sums, packing,
and the plane's tuning profiles."""

from __future__ import annotations

import collections
import os
from typing import Any

import pytest

from bench.scale import figures, orders
from bench.scale.figures import State
from bench.scale.packing import Packing, bundled_class, bundled_recipes, pack
from devtools.cluster import fleet
from devtools.cluster.tuning import tuning
from testkit.planner import BGE_LARGE, LLAMA_70B, QWEN3_8B_FP8, QWEN_32B_AWQ

Obj = dict[str, Any]


def test_the_mix_is_interleaved_by_weight_and_any_prefix_keeps_it() -> None:
    one = orders.schedule()
    assert len(one) == sum(m.weight for m in orders.MIX)
    assert collections.Counter(m.repo for m in one) == {m.repo: m.weight for m in orders.MIX}
    # smooth: the heaviest model never comes three times in a row
    reps = [m.repo for m in one]
    assert all(not (a == b == c) for a, b, c in zip(reps, reps[1:], reps[2:], strict=False))


def test_orders_spread_over_namespaces_with_unique_names_and_gated_models_name_the_token() -> None:
    objs = orders.orders(200, 50)
    assert len({(o["metadata"]["namespace"], o["metadata"]["name"]) for o in objs}) == 200
    assert len({o["metadata"]["namespace"] for o in objs}) == 50
    for o in objs:
        model = o["spec"]["model"]
        gated = model["ref"]["name"].startswith("meta-llama/")
        assert ("authSecretRef" in model) == gated
        assert len(o["metadata"]["name"]) <= 63
    assert orders.distinct_models(objs) == len(orders.MIX)
    ns = orders.namespace_objects(3)
    assert [o["kind"] for o in ns] == ["Namespace", "Secret"] * 3


def order_with(generation: int, observed: int, planned: Obj | None, phase: str = "Pending") -> Obj:
    conditions = [planned] if planned else []
    return {
        "metadata": {"generation": generation},
        "status": {"observedGeneration": observed, "phase": phase, "conditions": conditions},
    }


@pytest.mark.parametrize(
    ("obj", "want"),
    [
        ({"metadata": {"generation": 1}}, State.WAITING),
        (order_with(2, 1, {"type": "Planned", "status": "True"}, "Ready"), State.WAITING),
        (order_with(1, 1, {"type": "Planned", "status": "Unknown", "reason": "Awaiting"}), State.WAITING),
        (order_with(1, 1, {"type": "Planned", "status": "True"}), State.PLANNED),
        (order_with(1, 1, {"type": "Planned", "status": "True"}, "Ready"), State.READY),
        (order_with(1, 1, {"type": "Planned", "status": "False", "reason": "NoCapacity"}), State.NO_CAPACITY),
        (
            order_with(1, 1, {"type": "Planned", "status": "False", "reason": "QuantizationMismatch"}),
            State.REFUSED,
        ),
    ],
)
def test_state_of_an_order(obj: Obj, want: State) -> None:
    assert figures.state(obj) is want


def slice_of(pool: str, *devices: Obj) -> Obj:
    return {"spec": {"driver": "gpu.nvidia.com", "pool": {"name": pool}, "devices": list(devices)}}


def claim(*results: Obj) -> Obj:
    return {"status": {"allocation": {"devices": {"results": list(results)}}}}


def result(pool: str, device: str, memory: str | None = None) -> Obj:
    r: Obj = {"driver": "gpu.nvidia.com", "pool": pool, "device": device}
    if memory:
        r["consumedCapacity"] = {"memory": memory}
    return r


def test_overcommit_counts_whole_devices_given_twice_and_shared_devices_beyond_their_memory() -> None:
    fleet_devices = figures.devices(
        [
            slice_of("n1", {"name": "gpu-0"}, {"name": "gpu-1"}),
            slice_of(
                "n2",
                {
                    "name": "gpu-0",
                    "allowMultipleAllocations": True,
                    "capacity": {"memory": {"value": "24Gi"}},
                },
            ),
        ]
    )
    fine = [
        claim(result("n1", "gpu-0")),
        claim(result("n1", "gpu-1")),
        claim(result("n2", "gpu-0", "12Gi")),
        claim(result("n2", "gpu-0", "12Gi")),
    ]
    assert figures.overcommit(fine, fleet_devices).total == 0
    twice = [*fine, claim(result("n1", "gpu-0")), claim(result("n2", "gpu-0", "1Gi")), {"status": {}}]
    got = figures.overcommit(twice, fleet_devices)
    assert (got.whole, got.shared) == (1, 1)


METRICS = """\
# HELP inference_controller_api_writes_total Writes
# TYPE inference_controller_api_writes_total counter
inference_controller_api_writes_total{kind="Deployment",verb="apply"} 3.0
inference_controller_api_writes_total{kind="InferenceService",verb="status"} 4.0
# HELP inference_controller_queue_depth Keys
# TYPE inference_controller_queue_depth gauge
inference_controller_queue_depth 0.0
"""


def test_metric_sum_adds_the_samples_matching_the_labels() -> None:
    assert figures.metric_sum(METRICS, "inference_controller_api_writes_total") == 7
    assert figures.metric_sum(METRICS, "inference_controller_api_writes_total", {"verb": "status"}) == 4
    assert figures.metric_sum(METRICS, "nothing_total") == 0


def test_writes_split_events_from_every_other_write_and_name_the_configmap_ones() -> None:
    page = METRICS.replace(
        "# HELP inference_controller_queue_depth",
        'inference_controller_api_writes_total{kind="Event",verb="create"} 12.0\n'
        'inference_controller_api_writes_total{kind="ConfigMap",verb="patch"} 2.0\n'
        "# HELP inference_controller_queue_depth",
    )
    got = figures.writes(page)
    assert (got.objects, got.events, got.configmaps) == (9, 12, 2)
    assert got - figures.writes(METRICS) == figures.Writes(objects=2, events=12, configmaps=2)


def test_proc_stat_reads_this_process() -> None:
    got = figures.proc_stat(os.getpid())
    assert got.rss_mb > 10
    assert got.cpu_seconds > 0


def test_offline_packing_plans_until_the_fleet_is_full_and_counts_the_rest_as_no_capacity() -> None:
    objs = fleet.default_fleet()
    slices = [o for o in objs if o["kind"] == "ResourceSlice"]
    classes = [o for o in objs if o["kind"] == "DeviceClass"]
    facts = {m.name: m for m in (LLAMA_70B, QWEN_32B_AWQ, BGE_LARGE, QWEN3_8B_FP8)}
    many = [orders.order("ns", f"o{i}", orders.Model(list(facts)[i % 4], "Chat", 1)) for i in range(60)]
    got = pack(many, slices, classes, facts, bundled_class(), bundled_recipes())
    assert got.planned + sum(got.refused.values()) == 60
    assert got.no_capacity > 0
    assert got.planned <= 40  # never more orders than devices
    assert Packing(planned=1, refused={}).no_capacity == 0


def test_large_fleet_has_exactly_the_nodes_asked_for_and_about_five_devices_each() -> None:
    for n in (42, 92, 992):
        objs = fleet.large_fleet(n)
        nodes = sum(o["kind"] == "Node" for o in objs)
        devices = sum(len(o["spec"]["devices"]) for o in objs if o["kind"] == "ResourceSlice")
        assert nodes == n
        assert 4 <= devices / nodes <= 6


def test_the_default_profile_keeps_the_tests_plane_and_scale_lifts_the_limits() -> None:
    default, scale = tuning("default"), tuning("scale")
    assert default.kwok == ("--node-lease-duration-seconds=40",)
    assert default.controller_manager == ("--horizontal-pod-autoscaler-sync-period=5s",)
    assert "--node-lease-duration-seconds=600" in scale.kwok
    assert any(a.startswith("--node-monitor-grace-period=") for a in scale.controller_manager)
    assert "--kube-api-qps=5000" in scale.scheduler
    with pytest.raises(ValueError, match="unknown plane profile"):
        tuning("fast")
