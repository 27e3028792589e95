"""What ``bench.scale.optimal`` is fed: devices read from the ResourceSlices, and per order the class's
rules and the memory need, read here without the planner's inventory, placement or search.

The one thing taken from production is the memory estimate (``controller.planner.estimate``): the
need is an input of the packing, and its own checks are the estimate's tests against published
figures. Everything else is read from the objects, the class and the recipe as documented
(docs/admin-guide.md, "Layout": tensor parallel within a node, a power of two dividing the attention
heads, at most ``maxAcceleratorsPerReplica``; the recipe's ``quantizations`` table: the least compute
capability per method).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bench.scale.optimal import GPU, MIG, Demand, Device, Optimum, solve
from controller.model_facts.facts import ModelFacts
from controller.planner.estimate import estimate_memory
from shared.api.inference_class import InferenceServiceClassSpec
from shared.api.recipe import InferenceRecipe

Obj = Mapping[str, Any]
_UNITS = {"": 1, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "k": 10**3, "M": 10**6, "G": 10**9}
_MODE_KIND = {"Exclusive": GPU, "MIG": MIG}
NO_CAPACITY = "NoCapacity"
FORCED_LIMIT = 300  # NoCapacity refusals judged one by one (a solve each)


def _bytes(text: str) -> int:
    m = re.fullmatch(r"(\d+)([A-Za-z]*)", text.strip())
    if not m or m.group(2) not in _UNITS:
        raise ValueError(f"not a memory quantity: {text!r}")
    return int(m.group(1)) * _UNITS[m.group(2)]


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in text.split(".")[:2])


def devices_of(slices: Iterable[Obj]) -> list[Device]:
    out: list[Device] = []
    for s in slices:
        spec = s["spec"]
        for d in spec.get("devices") or []:
            attrs = {k.rsplit("/", 1)[-1]: v for k, v in (d.get("attributes") or {}).items()}
            kind = attrs.get("type", {}).get("string")
            if kind not in (GPU, MIG):
                continue
            out.append(
                Device(
                    node=spec["nodeName"],
                    name=d["name"],
                    product=attrs["productName"]["string"],
                    memory=_bytes(d["capacity"]["memory"]["value"]),
                    kind=kind,
                    capability=_version(attrs["cudaComputeCapability"]["version"]),
                )
            )
    return out


def class_kinds(device_classes: Iterable[Obj], cspec: InferenceServiceClassSpec) -> frozenset[str]:
    """Device kinds the class may take: its device classes' ``type`` that one of its modes uses."""
    kind_of: dict[str, str] = {}
    for dc in device_classes:
        for sel in dc.get("spec", {}).get("selectors") or []:
            if m := re.search(r"\.type == '(\w+)'", sel.get("cel", {}).get("expression", "")):
                kind_of[dc["metadata"]["name"]] = m.group(1)
    modes = {_MODE_KIND[m] for m in cspec.placement.sharing_modes or ["Exclusive"] if m in _MODE_KIND}
    if set(cspec.placement.sharing_modes or []) - set(_MODE_KIND):
        raise ValueError("the optimal packing knows no sharing modes (TimeSlicing, MPS)")
    return frozenset(k for n in cspec.placement.device_class_names if (k := kind_of.get(n)) in modes)


def demand_of(
    facts: ModelFacts, cspec: InferenceServiceClassSpec, recipe: InferenceRecipe, kinds: frozenset[str]
) -> Demand:
    most = cspec.placement.max_accelerators_per_replica or 8
    heads = facts.num_attention_heads
    sizes = [1] + [2**i for i in range(1, 8) if 2**i <= most and heads and heads % 2**i == 0]
    util = recipe.spec.gpu_memory_utilization or 0.9
    estimate = estimate_memory(facts)
    method = (facts.quantization or "none").lower()
    table = {q.method.lower(): q.min_compute_capability for q in recipe.spec.quantizations or []}
    if method not in table:
        raise ValueError(f"the recipe does not serve {method}")
    return Demand(
        need={n: estimate.per_device_need(n, util) for n in sizes},
        min_capability=_version(table[method]),
        kinds=kinds,
    )


@dataclass(frozen=True)
class Comparison:
    orders: int
    optimum: Optimum
    forced: int | None = None  # of the planner's NoCapacity, those no packing avoids: ``forced``

    @property
    def no_capacity(self) -> int:
        """The fewest orders left without room: orders minus the most placed (bound when not proven)."""
        return self.orders - self.optimum.placed

    def figures(self) -> dict[str, Any]:
        return {
            "optimal_placed": self.optimum.placed,
            "optimal_no_capacity": self.no_capacity,
            "optimal_proven": self.optimum.optimal,
            "optimal_no_capacity_at_least": self.orders - self.optimum.bound,
            **({} if self.forced is None else {"planner_no_capacity_forced": self.forced}),
        }


def forced(
    devices: Sequence[Device],
    demands: Sequence[Demand],
    outcomes: Sequence[str],
    seconds: float,
    limit: int = FORCED_LIMIT,
) -> int | None:
    """How many of the planner's NoCapacity refusals no packing could have avoided: the orders it
    had placed before, with the refused one, fit no way at once (the rest it refused because of
    where it had put the earlier ones; it never moves a placed order). A solve per refusal: None
    beyond ``limit`` refusals."""
    if sum(o == NO_CAPACITY for o in outcomes) > limit:
        return None
    placed: list[Demand] = []
    count = 0
    for demand, outcome in zip(demands, outcomes, strict=True):
        if outcome == "":
            placed.append(demand)
        elif outcome == NO_CAPACITY and solve(devices, [*placed, demand], seconds).bound <= len(placed):
            count += 1
    return count


def optimal_packing(
    orders: Iterable[Obj],
    slices: Iterable[Obj],
    device_classes: Iterable[Obj],
    facts: Mapping[str, ModelFacts],
    cspec: InferenceServiceClassSpec,
    recipe: InferenceRecipe,
    seconds: float = 60.0,
    outcomes: Sequence[str] | None = None,
) -> Comparison:
    """The most of ``orders`` the fleet holds at once; with the planner's ``outcomes`` (per order,
    "" or its refusal, ``packing.Packing.outcomes``) also how many of its NoCapacity were forced."""
    kinds = class_kinds(device_classes, cspec)
    memo: dict[str, Demand] = {}
    demands = []
    for o in orders:
        repo = o["spec"]["model"]["ref"]["name"]
        if repo not in memo:
            memo[repo] = demand_of(facts[repo], cspec, recipe, kinds)
        demands.append(memo[repo])
    devices = devices_of(slices)
    best = solve(devices, demands, seconds)
    return Comparison(
        len(demands), best, None if outcomes is None else forced(devices, demands, outcomes, seconds)
    )
