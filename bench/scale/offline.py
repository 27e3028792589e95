"""``python -m bench.scale.offline --nodes N --orders M``: the scale bench's fleet and orders without a
plane, packed twice: by the planner (``bench.scale.packing``: ``plan_order`` on the ledger, in
creation order, as the controller does) and by the exact solver (``bench.scale.optimal``). Prints one
JSON object per size; the planner can leave more orders without room than the optimum, never fewer.

The fleet is the one ``bench.scale`` applies: the default fleet plus ``large_fleet(N - 8)``. The
model facts are the Hub mirror's (standins/hub_data) read as the controller reads them.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Sequence
from typing import Any

from bench.scale import orders as ord_
from bench.scale.optimal_input import optimal_packing
from bench.scale.packing import bundled_class, bundled_recipes, pack
from controller.model_facts.facts import ModelFacts
from devtools.cluster import fleet

Obj = dict[str, Any]


def fleet_objects(nodes: int) -> tuple[list[Obj], list[Obj]]:
    """The slices and device classes of ``bench.scale --nodes N``."""
    default = fleet.default_fleet()
    extra = nodes - sum(g.count for g in fleet.FLEET)
    objs = default + (fleet.large_fleet(extra) if extra > 0 else [])
    return fleet.resource_slices(objs), fleet.device_class_objects(default)


def mirror_facts(repos: Sequence[str]) -> dict[str, ModelFacts]:
    from testkit.mirror_facts import facts_of

    return {repo: facts_of(repo) for repo in sorted(set(repos))}


def compare(nodes: int, orders: int, seconds: float = 60.0) -> dict[str, Any]:
    slices, classes = fleet_objects(nodes)
    objs = ord_.orders(orders, 50)
    facts = mirror_facts([o["spec"]["model"]["ref"]["name"] for o in objs])
    cspec, recipes = bundled_class(), bundled_recipes()
    t0 = time.monotonic()
    planner = pack(objs, slices, classes, facts, cspec, recipes)
    t1 = time.monotonic()
    best = optimal_packing(objs, slices, classes, facts, cspec, recipes[0], seconds, planner.outcomes)
    t2 = time.monotonic()
    return {
        "nodes": nodes,
        "devices": sum(len(s["spec"]["devices"]) for s in slices),
        "orders": orders,
        "planner_planned": planner.planned,
        "planner_no_capacity": planner.no_capacity,
        "planner_refused": {k: v for k, v in planner.refused.items() if k != "NoCapacity"},
        **best.figures(),
        "gap": planner.no_capacity - best.no_capacity,
        "planner_seconds": round(t1 - t0, 2),
        "solver_seconds": round(t2 - t1, 2),
    }


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.scale.offline", description=__doc__.splitlines()[0])
    p.add_argument("--nodes", type=int, nargs="+", default=[50])
    p.add_argument("--orders", type=int, nargs="+", default=[100])
    p.add_argument("--seconds", type=float, default=60.0, help="the solver's time limit per size")
    args = p.parse_args(argv)
    if len(args.nodes) != len(args.orders):
        p.error("--nodes and --orders take as many sizes each")
    for n, m in zip(args.nodes, args.orders, strict=True):
        print(json.dumps(compare(n, m, args.seconds)), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
