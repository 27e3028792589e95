"""Planner benchmark: build time of the inventory and plan time per order, for fleets of about
100, 1,000 and 10,000 devices from ``devtools.cluster.fleet.large_fleet``.

    .venv/bin/python -m bench.planner [--orders 21]      # or bench.planner.run

Two tables, one line per fleet each.

The first is what the controller did before the ledger: ``build_inventory`` over every slice, then
``plan_order`` per order: devices, nodes, inventory build time, the median / p95 / max plan time
over a fixed mix of real models (the table-test models) and class shapes, and how many orders were
planned (each plan's devices are fed back, so later orders see a fuller fleet; refusals such as the
405B model's NoAcceleratorWithEnoughMemory run the slower diagnosis and make the p95/max).

The second is the capacity ledger (``controller.planner.ledger.Ledger``) fed as the informers feed
it: its build time from one ``on_slice`` event per ResourceSlice (total, and per event), the cost
of one more slice event and of one claim event on the built ledger, and the plan time per order
through ``Ledger.take`` (the order's view, the planner, the booking), same orders, same columns.
"""

from __future__ import annotations

import argparse
import math
import statistics
import time
from typing import Any

from controller.planner import Inventory, PlanOutcome, build_inventory, plan_order
from controller.planner.ledger import Ledger, Use, use_of
from devtools.cluster.fleet import large_fleet
from shared.cel import compile_selector
from testkit.planner import (
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


def percentiles(times: list[float]) -> tuple[float, float, float]:
    """Median, p95 and max, in milliseconds."""
    times = sorted(times)
    p95 = times[min(len(times) - 1, math.ceil(0.95 * len(times)) - 1)]
    return statistics.median(times) * 1000, p95 * 1000, times[-1] * 1000


def ledger_row(objects: list[dict[str, Any]], nodes: int, orders: int) -> str:
    """Build a ledger from slice events, then plan ``orders`` orders through ``Ledger.take``."""
    slices = [o for o in objects if o.get("kind") == "ResourceSlice"]
    ledger = Ledger()
    for dc in (o for o in objects if o.get("kind") == "DeviceClass"):
        ledger.on_device_class(dc)
    start = time.perf_counter()
    for rs in slices:
        ledger.on_slice(rs)
    built = time.perf_counter() - start
    assert ledger.device_count() == count_devices(objects), ledger.unreadable()
    one_slice = statistics.median(_timed(ledger.on_slice, slices[(i * 7919) % len(slices)]) for i in range(9))
    times: list[float] = []
    planned = 0
    for i in range(orders):
        facts = MODELS[i % len(MODELS)]
        spec = CLASSES[i % len(CLASSES)]
        result: list[PlanOutcome] = []

        def plan(inventory: Inventory, facts: Any = facts, spec: Any = spec, result: Any = result) -> Any:
            outcome = plan_order(make_request(inventory, facts, class_spec=spec))
            result.append(outcome)
            if not outcome.ok or outcome.plan is None:
                return None, Use()
            return outcome.plan.model_dump_json(), use_of(outcome.allocation, outcome.shared_bytes)

        start = time.perf_counter()
        ledger.take(("bench", f"order-{i}"), (), plan)
        times.append(time.perf_counter() - start)
        planned += 1 if result[0].ok else 0
    assert not ledger.over_committed()
    claim = _claim_on(ledger)
    ledger.view(("bench", "warm"))  # the first view after the slice events indexes the fleet once
    one_claim = statistics.median(
        _timed(ledger.on_claim, claim, deleted=bool(i % 2)) for i in range(9)
    )  # allocated, then freed, ...
    p50, p95, worst = percentiles(times)
    return (
        f"{count_devices(objects):>8} {nodes:>6} {built * 1000:>10.0f} {built * 1e6 / len(slices):>11.0f} "
        f"{one_slice * 1e6:>10.0f} {one_claim * 1e6:>10.0f} {p50:>12.1f} {p95:>8.1f} {worst:>8.1f} "
        f"{planned:>4}/{orders:<3}"
    )


def _timed(fn: Any, *args: Any, **kwargs: Any) -> float:
    start = time.perf_counter()
    fn(*args, **kwargs)
    return time.perf_counter() - start


def _claim_on(ledger: Ledger) -> dict[str, Any]:
    """An allocated claim on the first device of the fleet, as the scheduler writes it."""
    driver, pool, device = ledger.view(("bench", "claims")).devices[0].key
    result = {"request": "gpu", "driver": driver, "pool": pool, "device": device}
    return {
        "metadata": {"name": "bench-claim", "namespace": "bench"},
        "status": {"allocation": {"devices": {"results": [result]}}},
    }


def run(orders: int) -> None:
    compile_selector("true")  # builds celpy's parser once, as a running controller already has
    fleets = [fleet_for(target) for target in TARGETS]
    print("Before the ledger: build_inventory per planning reconcile, then plan_order")
    print(
        f"{'devices':>8} {'nodes':>6} {'inventory ms':>13} {'plan p50 ms':>12} {'p95 ms':>8} {'max ms':>8} "
        f"{'planned':>8}"
    )
    for objects, nodes in fleets:
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
    print()
    print("The ledger: built from one on_slice event per ResourceSlice, then plan through Ledger.take")
    print(
        f"{'devices':>8} {'nodes':>6} {'ledger ms':>10} {'build µs/sl':>11} {'slice µs':>10} "
        f"{'claim µs':>10} {'plan p50 ms':>12} {'p95 ms':>8} {'max ms':>8} {'planned':>8}"
    )
    for objects, nodes in fleets:
        print(ledger_row(objects, nodes, orders))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--orders", type=int, default=21, help="orders planned per fleet")
    run(parser.parse_args().orders)


if __name__ == "__main__":
    main()
