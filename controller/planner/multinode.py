"""Multi-node placement: a replica that no single node can hold, on several nodes of one product. Pure.

The layout search; ``controller.planner.multinode_plan`` turns its answer into a launch plan or
the reason there is none. Called by ``plan_order`` only when the single-node search came up empty, the class allows the
Exclusive sharing mode and ``placement.maxNodesPerReplica`` is above 1, and only for a model that
no single node could hold even on an empty cluster (a busy fleet is NoCapacity, never a reason to
spread a replica that fits one node).

The layout is vLLM's (0.11, on Ray): tensor parallel within each node, ``nodes x devices per node``,
the devices per node a power of two dividing the attention heads and at most
``maxAcceleratorsPerReplica``; pipeline parallel across the nodes, each node one stage holding
``ceil(layers / nodes)`` of the layers (vLLM splits them as evenly as it can; the largest stage
sizes every node). Each device then needs its stage's share of the weights and of the KV cache for
the minimum context, divided by the devices of its node, plus the overhead with NCCL buffers, under
the recipe's memory utilization, as ``estimate.MemoryEstimate.per_device_need`` does for one node.

Candidates sort by the memory they take (the smallest total first), then the fewest nodes, then
product and node names. The nodes are those with enough free devices of the product, by name.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from controller.planner.estimate import MemoryEstimate
from controller.planner.inventory import Device, DeviceKey
from controller.planner.placement import first_recipe, mode_accepts, utilization
from controller.planner.recipes import RecipeChoice


@dataclass(frozen=True)
class Spread:
    """One replica over ``nodes`` nodes, ``per_node`` devices on each (listed node by node)."""

    device_class: str
    devices: tuple[Device, ...]
    nodes: int
    per_node: int
    recipe: RecipeChoice
    utilization: float

    @property
    def first(self) -> Device:
        return self.devices[0]

    @property
    def total(self) -> int:
        return self.nodes * self.per_node

    def sort_key(self) -> tuple[int, int, str, tuple[str, ...]]:
        hosts = tuple(dict.fromkeys(d.node for d in self.devices))
        return (self.first.memory_bytes * self.total, self.nodes, self.first.product_name, hosts)


def stage_fraction(layers: int | None, nodes: int) -> float:
    """The share of the model the largest pipeline stage holds."""
    if not layers or layers < nodes:
        return 1 / nodes
    return math.ceil(layers / nodes) / layers


def per_device_need(
    estimate: MemoryEstimate, layers: int | None, nodes: int, per_node: int, util: float
) -> int:
    """Device memory each device of a ``nodes x per_node`` replica must have."""
    share = stage_fraction(layers, nodes)
    used = (estimate.weights + estimate.kv_cache) * share / per_node + estimate.overhead(nodes * per_node)
    return math.ceil(used / util)


def max_model_len(estimate: MemoryEstimate, layers: int | None, spread: Spread, context_length: int) -> int:
    """The longest context the KV cache left on each device holds, in 16-token blocks."""
    share = stage_fraction(layers, spread.nodes)
    budget = (
        spread.first.memory_bytes * spread.utilization
        - estimate.weights * share / spread.per_node
        - estimate.overhead(spread.total)
    )
    per_token = max(1.0, estimate.kv_bytes_per_token * share)
    tokens = int(budget * spread.per_node // per_token)
    return max(0, min(context_length, tokens // 16 * 16))


def spreads(
    *,
    device_class: str,
    devices: Sequence[Device],
    busy: frozenset[DeviceKey] | None,
    estimate: MemoryEstimate,
    choices: Sequence[RecipeChoice],
    tp_sizes: Sequence[int],
    max_nodes: int,
    layers: int | None,
) -> list[Spread]:
    """Every fitting multi-node layout, sorted; ``busy=None`` means on an empty cluster."""
    groups: dict[tuple[str, int, object], dict[str, list[Device]]] = defaultdict(lambda: defaultdict(list))
    for d in devices:
        if mode_accepts("Exclusive", d) and (busy is None or d.key not in busy):
            groups[(d.product_name, d.memory_bytes, d.compute_capability)][d.node].append(d)
    out: list[Spread] = []
    for by_node in groups.values():
        sample = next(iter(by_node.values()))[0]
        choice = first_recipe(choices, sample)
        if choice is None:
            continue
        util = utilization(choice)
        for nodes in range(2, max_nodes + 1):
            size = next(
                (
                    n
                    for n in tp_sizes
                    if per_device_need(estimate, layers, nodes, n, util) <= sample.memory_bytes
                ),
                None,
            )
            if size is None:
                continue
            hosts = sorted(h for h, ds in by_node.items() if len(ds) >= size)
            if len(hosts) < nodes:
                continue
            chosen = tuple(d for h in hosts[:nodes] for d in sorted(by_node[h], key=lambda d: d.name)[:size])
            out.append(Spread(device_class, chosen, nodes, size, choice, util))
    out.sort(key=Spread.sort_key)
    return out
