"""Planner benchmark: build time of the inventory and plan time per order, for fleets of about
100, 1,000 and 10,000 devices from ``tests.cluster.fleet.large_fleet``.

    .venv/bin/python -m bench.planner.run [--orders 20]

Prints one line per fleet: devices, nodes, inventory build time, the median / p95 / max plan time
over a fixed mix of real models (the table-test models) and class shapes, and how many orders were
planned (each plan's devices are fed back, so later orders see a fuller fleet; refusals such as the
405B model's NoAcceleratorWithEnoughMemory run the slower diagnosis and make the p95/max).
"""

from __future__ import annotations

import argparse
import math
import statistics
import time
from typing import Any

from controller.planner import Inventory, build_inventory, plan_order
from shared.cel import compile_selector
from tests.cluster.fleet import large_fleet
from tests.unit.planner.builders import (
    BGE_LARGE,
    BGE_RERANKER,
    LLAMA_8B,
    LLAMA_70B,
    LLAMA_405B,
    QWEN3_8B_FP8,
    QWEN_32B_AWQ,
    make_class,
    make_request,
)

TARGETS = (100, 1_000, 10_000)
MODELS = [QWEN_32B_AWQ, LLAMA_8B, LLAMA_70B, BGE_LARGE, BGE_RERANKER, QWEN3_8B_FP8, LLAMA_405B]
CLASSES = [
    make_class(),
    make_class(sharingModes=["MIG", "Exclusive"]),
    make_class(selector='device.attributes["gpu.nvidia.com"].productName.matches("H100|A100")'),
]


def count_devices(objects: list[dict[str, Any]]) -> int:
    return sum(len(o["spec"].get("devices") or []) for o in objects if o.get("kind") == "ResourceSlice")


def fleet_for(target: int) -> tuple[list[dict[str, Any]], int]:
    """The smallest large_fleet with at least ``target`` devices."""
    per_node = max(1, count_devices(large_fleet(8)) / 8)
    nodes = max(1, math.ceil(target / per_node))
    objects = large_fleet(nodes)
    while count_devices(objects) < target:
        nodes += max(1, nodes // 20)
        objects = large_fleet(nodes)
    return objects, nodes


def run(orders: int) -> None:
    compile_selector("true")  # builds celpy's parser once, as a running controller already has
    print(
        f"{'devices':>8} {'nodes':>6} {'inventory ms':>13} {'plan p50 ms':>12} {'p95 ms':>8} {'max ms':>8} "
        f"{'planned':>8}"
    )
    for target in TARGETS:
        objects, nodes = fleet_for(target)
        slices = [o for o in objects if o.get("kind") == "ResourceSlice"]
        classes = [o for o in objects if o.get("kind") == "DeviceClass"]
        start = time.perf_counter()
        inv = build_inventory(resource_slices=slices, device_classes=classes, resource_claims=[])
        built = time.perf_counter() - start
        assert isinstance(inv, Inventory), inv
        times: list[float] = []
        planned = 0
        for i in range(orders):
            facts = MODELS[i % len(MODELS)]
            request = make_request(inv, facts, class_spec=CLASSES[i % len(CLASSES)])
            start = time.perf_counter()
            outcome = plan_order(request)
            times.append(time.perf_counter() - start)
            if outcome.ok:
                planned += 1
                inv = inv.with_allocation(outcome.allocation, memory=outcome.shared_bytes)
        times.sort()
        p95 = times[min(len(times) - 1, math.ceil(0.95 * len(times)) - 1)]
        print(
            f"{count_devices(objects):>8} {nodes:>6} {built * 1000:>13.0f} "
            f"{statistics.median(times) * 1000:>12.1f} {p95 * 1000:>8.1f} {times[-1] * 1000:>8.1f} "
            f"{planned:>4}/{orders:<3}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--orders", type=int, default=21, help="orders planned per fleet")
    run(parser.parse_args().orders)


if __name__ == "__main__":
    main()
