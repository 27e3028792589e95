"""How many more replicas of a plan in force the ledger's free devices hold (``planner.headroom``),
read through ``Ledger.look`` as the controller reads it: every claim and reservation taken, the
order's own too, counted up to the replicas still wanted."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from controller.planner import LaunchPlan
from controller.planner.headroom import more_replicas, replica_shape
from controller.planner.inventory import DeviceKey
from controller.planner.ledger import Ledger, Use
from shared.quantity import parse_quantity
from testkit.planner import (
    DRIVER,
    GPU_CLASS,
    MIG_CLASS,
    fleet_objects,
    gpu,
    make_claim,
    make_class,
    make_recipe,
    make_slice,
    plan,
    small_fleet,
)
from tests.unit.controller.snapshots import GPU, MIG, SMALL, plan_on

Obj = dict[str, Any]
ORDER = ("support", "support-llm")
H100 = "NVIDIA H100 80GB HBM3"
L4S = [(DRIVER, f"gpu-l4-{i}", "gpu-0") for i in range(4)]


def fleet_ledger(claims: Iterable[Obj] = ()) -> Ledger:
    """The default fleet of the local plane: 2 nodes of 8 H100, A100s, an A100 MIG node, 4 L4 nodes."""
    return ledger_of(fleet_objects(), claims)


def ledger_of(objects: Iterable[Obj], claims: Iterable[Obj] = ()) -> Ledger:
    ledger = Ledger()
    objects = list(objects)
    classes = [o for o in objects if o.get("kind") == "DeviceClass"] or [GPU_CLASS, MIG_CLASS]
    for dc in classes:
        ledger.on_device_class(dc)
    for o in objects:
        if o.get("kind") == "ResourceSlice":
            ledger.on_slice(o)
    for c in claims:
        ledger.on_claim(c)
    return ledger


def more(ledger: Ledger, p: LaunchPlan, limit: int) -> int:
    return ledger.look(ORDER, lambda inventory, _claims, _reservation: more_replicas(p, inventory, limit))


def foreign(name: str, *keys: DeviceKey, **result: Any) -> Obj:
    return make_claim(name, "other", list(keys), order="other-llm", **result)


def l4() -> LaunchPlan:
    p = plan_on(GPU)
    assert (p.product_name, p.devices_per_pod, p.sharing_mode) == ("NVIDIA L4", 1, "Exclusive")
    return p


def test_the_free_fleet_holds_more_replicas_counted_up_to_the_limit() -> None:
    """Four free L4s: 2 more when 2 are wanted (the count stops there), 4 when 10 are."""
    ledger = fleet_ledger()
    assert more(ledger, l4(), 2) == 2
    assert more(ledger, l4(), 10) == 4
    assert more(ledger, l4(), 0) == 0


def test_devices_other_orders_hold_are_no_room() -> None:
    assert more(fleet_ledger([foreign("c1", *L4S[:3])]), l4(), 2) == 1
    assert more(fleet_ledger([foreign(f"c{i}", k) for i, k in enumerate(L4S)]), l4(), 2) == 0


def test_the_orders_own_claims_and_reservation_are_no_room() -> None:
    """The order's running replicas hold two L4s and its reservation a third: one is left. (Its own
    view, ``Ledger.view``, would offer the reserved L4 back to it.)"""
    own = make_claim("support-llm-0-gpu-x", "support", L4S[:2], order="support-llm")
    ledger = fleet_ledger([own])
    ledger.take(ORDER, [], lambda _inv: ("plan-hash", Use(whole=frozenset({L4S[2]}))))
    assert more(ledger, l4(), 3) == 1
    names, reservation = ledger.look(ORDER, lambda _i, claims, res: (claims, res))
    assert names == {"support-llm-0-gpu-x"}
    assert reservation is not None and reservation.plan_hash == "plan-hash"


def test_tensor_parallel_replicas_need_their_devices_on_one_node() -> None:
    """2 x H100 per replica; one H100 taken on each 8-GPU node leaves 7 + 7 free: 3 + 3 replicas,
    not the 7 that 14 free devices would make across nodes."""
    p = l4().model_copy(
        update={
            "product_name": H100,
            "accelerator_count": 2,
            "device_selectors": [f'device.attributes["{DRIVER}"].productName == "{H100}"'],
        }
    )
    taken = [foreign("a", (DRIVER, "gpu-h100-0", "gpu-0")), foreign("b", (DRIVER, "gpu-h100-1", "gpu-0"))]
    assert more(fleet_ledger(taken), p, 10) == 6


def test_a_mig_replica_takes_a_free_mig_device_of_its_profile() -> None:
    """The default fleet's MIG node has two 1g.5gb devices on each of its 4 A100s."""
    p = plan_on(MIG)
    assert p.sharing_mode == "MIG" and any("1g.5gb" in s for s in p.device_selectors)
    assert more(fleet_ledger(), p, 100) == 8
    one = foreign("m", (DRIVER, "gpu-a100-mig-0", "gpu-0-mig-1g-5gb-2"))
    assert more(fleet_ledger([one]), p, 100) == 7


def test_a_whole_gpu_taken_blocks_its_mig_devices() -> None:
    """``small_fleet``'s a100-0 publishes its GPU and two MIG devices of it: a claim of the whole GPU
    leaves no MIG device to take."""
    p = plan_on(MIG).model_copy(
        update={
            "device_selectors": [
                f'device.attributes["{DRIVER}"].productName == "NVIDIA A100-SXM4-40GB"',
                f'device.attributes["{DRIVER}"].profile == "1g.5gb"',
            ]
        }
    )
    assert more(ledger_of(small_fleet()), p, 5) == 1
    assert more(ledger_of(small_fleet(), [foreign("w", (DRIVER, "a100-0", "gpu-0"))]), p, 5) == 0


def test_time_sliced_replicas_share_a_device_until_its_memory_is_taken() -> None:
    """The fleet's L4s allow multiple allocations: each holds as many shares as its memory."""
    ledger = fleet_ledger()
    out = ledger.look(
        ORDER,
        lambda inv, _c, _r: plan(
            inv,
            SMALL,
            class_spec=make_class(deviceClassNames=[GPU], sharingModes=["TimeSlicing"]),
            recipes=[make_recipe()],
        ),
    )
    assert out.ok and out.plan is not None and out.plan.sharing_mode == "TimeSlicing", out
    p = out.plan
    share = math.ceil(parse_quantity((p.capacity_requests or {})["memory"]))
    per_device = (24 * 2**30) // share
    assert per_device >= 2
    assert more(ledger, p, 1000) == 4 * per_device
    half = foreign("half", L4S[0], consumedCapacity={"memory": str(12 * 2**30)})
    assert more(fleet_ledger([half]), p, 1000) == 3 * per_device + (12 * 2**30) // share
    whole = foreign("whole", L4S[1])  # taken whole (Exclusive): no share fits on it
    assert more(fleet_ledger([whole]), p, 1000) == 3 * per_device


def test_a_multi_node_replica_is_a_group_of_nodes() -> None:
    """2 nodes x 1 L4 per replica: four free L4 nodes hold 2 groups; with one taken, 1."""
    p = l4().model_copy(update={"accelerator_count": 2, "node_count": 2, "placement_mode": "MultiNode"})
    assert p.devices_per_pod == 1
    assert more(fleet_ledger(), p, 10) == 2
    assert more(fleet_ledger([foreign("c", L4S[0])]), p, 10) == 1
    assert replica_shape(p) == "2 nodes x 1 x NVIDIA L4 from gpu.nvidia.com"


def test_only_devices_the_plans_selectors_accept_are_room() -> None:
    """The claim carries the class's selector too: an L4 it refuses is no room."""
    p = l4().model_copy(
        update={"device_selectors": [*l4().device_selectors, f'device.attributes["{DRIVER}"].type == "none"']}
    )
    assert more(fleet_ledger(), p, 10) == 0


def test_devices_published_or_withdrawn_later_are_counted_at_once() -> None:
    """The devices a plan accepts are kept per fleet version: a new L4 node is room, a gone one is not."""
    ledger = fleet_ledger()
    assert more(ledger, l4(), 10) == 4
    extra = make_slice("gpu-l4-9", [gpu("gpu-0", "NVIDIA L4", "24Gi", "8.9.0")])
    ledger.on_slice(extra)
    assert more(ledger, l4(), 10) == 5
    ledger.on_slice(extra, deleted=True)
    assert more(ledger, l4(), 10) == 4
