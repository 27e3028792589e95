"""Planner benchmark: build time of the inventory and plan time per order, for fleets of about
100, 1,000 and 10,000 devices from ``devtools.cluster.fleet.large_fleet``.

    .venv/bin/python -m bench.planner [--orders 21]      # or bench.planner.run
    .venv/bin/python -m bench.planner --cpu              # plan times in CPU time of the thread
    .venv/bin/python -m bench.planner --profile 10000    # cProfile shares of the ledger's plans

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
import cProfile
import gc
import math
import pathlib
import pstats
import statistics
import time
from collections.abc import Callable
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


def built_ledger(objects: list[dict[str, Any]]) -> tuple[Ledger, float]:
    """A ledger fed one ``on_slice`` event per ResourceSlice, and the seconds the events took."""
    ledger = Ledger()
    for dc in (o for o in objects if o.get("kind") == "DeviceClass"):
        ledger.on_device_class(dc)
    start = time.perf_counter()
    for rs in (o for o in objects if o.get("kind") == "ResourceSlice"):
        ledger.on_slice(rs)
    built = time.perf_counter() - start
    assert ledger.device_count() == count_devices(objects), ledger.unreadable()
    return ledger, built


def take(ledger: Ledger, i: int) -> bool:
    """Plan order ``i`` of the fixed mix through ``Ledger.take``; True when it was planned."""
    facts, spec = MODELS[i % len(MODELS)], CLASSES[i % len(CLASSES)]
    result: list[PlanOutcome] = []

    def plan(inventory: Inventory) -> Any:
        outcome = plan_order(make_request(inventory, facts, class_spec=spec))
        result.append(outcome)
        if not outcome.ok or outcome.plan is None:
            return None, Use()
        return outcome.plan.model_dump_json(), use_of(outcome.allocation, outcome.shared_bytes)

    ledger.take(("bench", f"order-{i}"), (), plan)
    return result[0].ok


def ledger_row(
    objects: list[dict[str, Any]], nodes: int, orders: int, clock: Callable[[], float] = time.perf_counter
) -> str:
    """Build a ledger from slice events, then plan ``orders`` orders through ``Ledger.take``."""
    slices = [o for o in objects if o.get("kind") == "ResourceSlice"]
    ledger, built = built_ledger(objects)
    one_slice = statistics.median(_timed(ledger.on_slice, slices[(i * 7919) % len(slices)]) for i in range(9))
    times: list[float] = []
    planned = 0
    for i in range(orders):
        start = clock()
        planned += take(ledger, i)
        times.append(clock() - start)
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


def run(orders: int, clock: Callable[[], float] = time.perf_counter) -> None:
    """Both tables; plan times by ``clock`` (wall time, or ``time.thread_time`` with ``--cpu``)."""
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
            start = clock()
            outcome = plan_order(request)
            times.append(clock() - start)
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
        print(ledger_row(objects, nodes, orders, clock))


def profile(orders: int, target: int, top: int) -> None:
    """cProfile of the plans through ``Ledger.take`` on the fleet of ``target`` devices, the first
    order of each class shape apart (it builds the class's view of the fleet, judging its selector
    once per device): each function's cumulative time as a share of the profiled plans' total, the
    ``top`` largest of the repository's own functions (the garbage collector paused meanwhile)."""
    objects, _ = fleet_for(target)
    ledger, _ = built_ledger(objects)
    warm = len(CLASSES)
    for i in range(warm):
        take(ledger, i)
    profiler = cProfile.Profile(time.thread_time)  # CPU time: preemption by neighbours is not counted
    gc.collect()
    gc.disable()  # a collection would land on whichever function allocated last, run to run
    start = time.perf_counter()
    profiler.enable()
    for i in range(warm, orders):
        take(ledger, i)
    profiler.disable()
    gc.enable()
    n = orders - warm
    wall = time.perf_counter() - start
    rows = pstats.Stats(profiler).stats  # type: ignore[attr-defined]  # key -> (cc, nc, tt, ct, callers)
    total = sum(tt for _, _, tt, _, _ in rows.values())
    print(
        f"cProfile of {n} plans through Ledger.take (orders {warm + 1} to {orders}), "
        f"{count_devices(objects)} devices: {wall / n * 1000:.2f} ms a plan under the profiler; "
        "cumulative share of each function (CPU time)"
    )
    root = str(pathlib.Path(__file__).resolve().parents[2]) + "/"
    ours = [
        (ct / total, f"{f.removeprefix(root)}:{name}")
        for (f, _, name), (_, _, _, ct, _) in rows.items()
        if f.startswith(root) and name != "take"
    ]
    for share, where in sorted(ours, reverse=True)[:top]:
        print(f"{share:>7.1%}  {where}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--orders", type=int, default=21, help="orders planned per fleet")
    parser.add_argument(
        "--profile", type=int, default=0, metavar="DEVICES", help="instead: cProfile the plans on this fleet"
    )
    parser.add_argument("--top", type=int, default=15, help="functions listed by --profile")
    parser.add_argument(
        "--cpu", action="store_true", help="plan times in CPU time of the planning thread (time.thread_time)"
    )
    args = parser.parse_args()
    if args.profile:
        profile(args.orders, args.profile, args.top)
    else:
        run(args.orders, time.thread_time if args.cpu else time.perf_counter)


if __name__ == "__main__":
    main()
