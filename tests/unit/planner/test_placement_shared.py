"""``placement.candidates`` for TimeSlicing: the share of a device an order takes, and a partly used
device. The planner's search answers ``candidates(...)[0]`` without building the list; the list is
what an order keeps its previous plan by. The mutation run (docs/testing.md) found this branch run
by no test: every mutant of it survived.

Hand figures: Llama-3.1-8B needs 22,092,270,433 bytes on one device at utilization 0.9 (20.58 GiB;
``test_planner_estimate``), 25.72% of an 80 GiB H100: 26%, 21,300 MiB (80 GiB x 26% rounded up to MiB).
"""

from __future__ import annotations

from typing import Any

from controller.planner.estimate import estimate_memory
from controller.planner.inventory import Inventory
from controller.planner.placement import Candidate, candidates
from controller.planner.recipes import model_recipes
from testkit.planner import LLAMA_8B, gpu, inventory_of, make_claim, make_recipe, make_slice

MIB = 2**20
DRIVER = "gpu.nvidia.com"


def shareable(name: str) -> dict[str, Any]:
    return gpu(name, "NVIDIA H100 80GB HBM3", "80Gi", "9.0.0", allowMultipleAllocations=True)


def shared_candidates(inv: Inventory) -> list[Candidate]:
    return candidates(
        device_class=DRIVER,
        mode="TimeSlicing",
        devices=inv.devices,
        inventory=inv,
        busy=inv.busy(),
        estimate=estimate_memory(LLAMA_8B),
        choices=model_recipes([make_recipe()], LLAMA_8B, "Chat"),
        tp_sizes=[1],
    )


def test_an_order_takes_the_smallest_whole_percentage_of_a_shared_device_that_holds_it() -> None:
    inv = inventory_of([make_slice("h100-0", [shareable("gpu-0")])])
    assert estimate_memory(LLAMA_8B).per_device_need(1, 0.9) == 22_092_270_433
    (c,) = shared_candidates(inv)
    assert (c.sharing_mode, c.share_percent, c.share_bytes) == ("TimeSlicing", 26, 21_300 * MIB)
    assert [d.name for d in c.devices] == ["gpu-0"] and c.recipe.name == "vllm"


def test_a_shared_device_with_too_little_memory_left_offers_no_share() -> None:
    def used(gib: int) -> Inventory:
        claim = make_claim(
            "c", "other", [(DRIVER, "h100-0", "gpu-0")], consumedCapacity={"memory": f"{gib}Gi"}
        )
        return inventory_of([make_slice("h100-0", [shareable("gpu-0"), shareable("gpu-1")])], [claim])

    # 60 GiB taken leaves 20 GiB (20,480 MiB): under 21,300 MiB, so only the untouched gpu-1
    assert [c.first.name for c in shared_candidates(used(60))] == ["gpu-1"]
    # 59 GiB taken leaves 21,504 MiB: both; the smaller free memory does not change the share
    offered = shared_candidates(used(59))
    assert sorted(c.first.name for c in offered) == ["gpu-0", "gpu-1"]
    assert {c.share_bytes for c in offered} == {21_300 * MIB}
