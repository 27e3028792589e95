"""The most orders a fleet can hold at once, by an exact solver (OR-Tools CP-SAT) that shares no code
with the planner: the bench's independent check of ``NoCapacity``.

The solver sees only devices, each order's memory need and the class's rules:

- a device is given to one order at most (no sharing modes: Exclusive whole GPUs and MIG devices);
- an order takes ``n`` whole devices of one product on one node, ``n`` one of its allowed
  tensor-parallel sizes, each device with at least ``need[n]`` bytes; or one MIG device with at
  least ``need[1]`` bytes, when the class allows MIG;
- a device's compute capability reaches the order's ``min_capability``.

It maximises the orders placed, in any order of arrival (the planner places them one by one, as
they come, and never moves one: it may place fewer, never more).

The model is aggregated so 1,000 nodes and 2,000 orders solve in seconds: identical orders are one
type with a count, identical nodes one class with a count, and a node's devices of one product one
pool. A pool's replicas are counted per class, ``sum(n * z) <= nodes * devices``, which is exact when
the sizes used on it divide each other and the pool's size (sizes of a divisibility chain pack
perfectly, first-fit decreasing); other pools get a variable per node. ``witness`` turns the counts
back into devices for each order, and ``check`` verifies an assignment against the rules alone.
"""

from __future__ import annotations

import itertools
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ortools.sat.python import cp_model

GPU, MIG = "gpu", "mig"


@dataclass(frozen=True)
class Device:
    node: str
    name: str
    product: str
    memory: int  # bytes
    kind: str = GPU  # GPU (a whole device) or MIG (a partition)
    capability: tuple[int, ...] = (9, 0)


@dataclass(frozen=True)
class Demand:
    """What one order needs: bytes on each device per allowed tensor-parallel size (the keys)."""

    need: Mapping[int, int]
    min_capability: tuple[int, ...] = (7, 0)
    kinds: frozenset[str] = frozenset({GPU, MIG})

    def key(self) -> tuple[tuple[tuple[int, int], ...], tuple[int, ...], tuple[str, ...]]:
        return (tuple(sorted(self.need.items())), self.min_capability, tuple(sorted(self.kinds)))


@dataclass(frozen=True)
class Optimum:
    placed: int  # orders placed by the best solution found
    bound: int  # no solution places more (== placed when ``optimal``)
    optimal: bool
    by_type: dict[int, dict[tuple[int, str, int], int]] = field(default_factory=dict)
    # demand type -> (pool, node or "" for a whole class, size) -> replicas; see ``witness``


PoolKey = tuple[str, str, int, tuple[int, ...]]  # kind, product, memory, capability


@dataclass(frozen=True)
class _Pool:
    key: PoolKey
    per_node: int  # devices of the pool on each node of its class
    nodes: tuple[str, ...]  # the class's nodes


def _pools(devices: Sequence[Device]) -> list[_Pool]:
    """Pools of identical devices on identical nodes: (kind, product, memory, capability) x node class."""
    by_node: dict[str, Counter[PoolKey]] = defaultdict(Counter)
    for d in devices:
        by_node[d.node][(d.kind, d.product, d.memory, d.capability)] += 1
    classes: dict[tuple[tuple[PoolKey, int], ...], list[str]] = defaultdict(list)
    for node, counts in sorted(by_node.items()):
        classes[tuple(sorted(counts.items()))].append(node)
    return [_Pool(key, count, tuple(nodes)) for shape, nodes in classes.items() for key, count in shape]


def _options(pool: _Pool, demand: Demand) -> list[int]:
    """Sizes of one replica of ``demand`` on one node of ``pool``."""
    kind, _, memory, capability = pool.key
    if kind not in demand.kinds or capability < demand.min_capability:
        return []
    sizes = [1] if kind == MIG else sorted(demand.need)
    return [n for n in sizes if n <= pool.per_node and n in demand.need and demand.need[n] <= memory]


def _chain(sizes: Sequence[int], bin_size: int) -> bool:
    s = sorted(set(sizes))
    return all(b % a == 0 for a, b in itertools.pairwise(s)) and (not s or bin_size % s[-1] == 0)


def solve(devices: Sequence[Device], demands: Sequence[Demand], seconds: float = 60.0) -> Optimum:
    types: dict[object, int] = {}
    counts: Counter[int] = Counter()
    reps: dict[int, Demand] = {}
    for d in demands:
        t = types.setdefault(d.key(), len(types))
        counts[t] += 1
        reps[t] = d
    model = cp_model.CpModel()
    z: dict[tuple[int, int, str, int], cp_model.IntVar] = {}  # (type, pool, node or "", size)
    for p, pool in enumerate(_pools(devices)):
        options = {t: _options(pool, reps[t]) for t in reps}
        sizes = [n for ns in options.values() for n in ns]
        if not sizes:
            continue
        bins = [""] if _chain(sizes, pool.per_node) else list(pool.nodes)
        for b in bins:
            nodes = len(pool.nodes) if b == "" else 1
            used = []
            for t, ns in options.items():
                for n in ns:
                    cap = min(counts[t], nodes * (pool.per_node // n))
                    v = model.new_int_var(0, cap, f"z_{t}_{p}_{b}_{n}")
                    z[(t, p, b, n)] = v
                    used.append(n * v)
            model.add(sum(used) <= nodes * pool.per_node)
    for t, q in counts.items():
        mine = [v for (tt, *_), v in z.items() if tt == t]
        if mine:
            model.add(sum(mine) <= q)
    model.maximize(sum(z.values()))
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = seconds
    solver.parameters.num_workers = 1  # the bench machine's cores are shared
    status = solver.solve(model)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        raise RuntimeError(f"CP-SAT ended {solver.status_name(status)}")
    by_type: dict[int, dict[tuple[int, str, int], int]] = defaultdict(dict)
    for (t, p, b, n), v in z.items():
        if (x := solver.value(v)) > 0:
            by_type[t][(p, b, n)] = x
    placed = round(solver.objective_value)
    return Optimum(
        placed=placed,
        bound=round(solver.best_objective_bound) if status != cp_model.OPTIMAL else placed,
        optimal=status == cp_model.OPTIMAL,
        by_type=dict(by_type),
    )


def witness(devices: Sequence[Device], demands: Sequence[Demand], opt: Optimum) -> dict[int, list[Device]]:
    """Devices for each placed order (index into ``demands``), built from the solver's counts: per
    pool, replicas largest first, each on the first node with room (exact for a divisibility chain)."""
    pools = _pools(devices)
    free: dict[tuple[int, str], list[Device]] = defaultdict(list)
    for dev in sorted(devices, key=lambda d: (d.node, d.name)):
        for p, pool in enumerate(pools):
            if dev.node in pool.nodes and (dev.kind, dev.product, dev.memory, dev.capability) == pool.key:
                free[(p, dev.node)].append(dev)
    types: dict[object, int] = {}
    waiting: dict[int, list[int]] = defaultdict(list)
    for i, dem in enumerate(demands):
        waiting[types.setdefault(dem.key(), len(types))].append(i)
    jobs = sorted(
        (
            (n, p, b, t)
            for t, placed in opt.by_type.items()
            for (p, b, n), x in placed.items()
            for _ in range(x)
        ),
        reverse=True,
    )
    out: dict[int, list[Device]] = {}
    for n, p, b, t in jobs:
        node = next(m for m in ([b] if b else pools[p].nodes) if len(free[(p, m)]) >= n)
        out[waiting[t].pop(0)] = free[(p, node)][:n]
        del free[(p, node)][:n]
    return out


def check(demands: Sequence[Demand], assignment: Mapping[int, Sequence[Device]]) -> list[str]:
    """What an assignment breaks of the rules (empty: it keeps them all)."""
    problems: list[str] = []
    seen: set[tuple[str, str]] = set()
    for i, devs in assignment.items():
        d, n = demands[i], len(devs)
        keys = {(x.node, x.name) for x in devs}
        if len(keys) != n or keys & seen:
            problems.append(f"order {i}: a device given twice")
        seen |= keys
        if len({(x.node, x.product, x.kind) for x in devs}) != 1:
            problems.append(f"order {i}: devices of more than one node, product or kind")
        if n not in d.need or (devs[0].kind == MIG and n != 1):
            problems.append(f"order {i}: {n} devices is no allowed size")
        elif any(x.memory < d.need[n] or x.capability < d.min_capability for x in devs):
            problems.append(f"order {i}: a device too small or too old")
        if any(x.kind not in d.kinds for x in devs):
            problems.append(f"order {i}: a device kind the class does not allow")
    return problems
