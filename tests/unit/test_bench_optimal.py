"""The exact packing of bench/scale/optimal.py: instances small enough to check by hand, where a greedy
placement falls short, and a brute force over every assignment on random tiny fleets."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations

from hypothesis import given, settings
from hypothesis import strategies as st

from bench.scale.optimal import GPU, MIG, Demand, Device, check, solve, witness

G = 2**30
H100 = ("H100", 80 * G, (9, 0))
A100 = ("A100", 40 * G, (8, 0))
L4 = ("L4", 24 * G, (8, 9))


def node(name: str, gpu: tuple[str, int, tuple[int, int]], count: int, kind: str = GPU) -> list[Device]:
    product, memory, cap = gpu
    return [Device(name, f"d{i}", product, memory, kind, cap) for i in range(count)]


def one(gib: float, **kw: object) -> Demand:
    """An order that runs on one device of ``gib`` GiB (no tensor parallel)."""
    return Demand(need={1: int(gib * G)}, **kw)  # type: ignore[arg-type]


def tp_only(n: int, gib: float) -> Demand:
    """An order that needs ``n`` devices of ``gib`` GiB each (smaller sizes need too much)."""
    need = {k: 10**15 for k in (1, 2, 4, 8) if k < n}
    return Demand(need={**need, n: int(gib * G)})


def solved(devices: Sequence[Device], demands: Sequence[Demand]) -> int:
    opt = solve(devices, demands, seconds=10)
    assert opt.optimal and opt.bound == opt.placed
    found = witness(devices, demands, opt)
    assert len(found) == opt.placed
    assert check(demands, found) == []
    return opt.placed


def test_more_orders_than_devices_place_one_per_device() -> None:
    assert solved(node("a", H100, 2), [one(10)] * 3) == 2


def test_greedy_in_arrival_order_falls_short_where_the_optimum_swaps_the_devices() -> None:
    # first fit in arrival order: the 20 GiB order takes the 40 GiB A100, the 30 GiB order finds
    # nothing; the optimum puts the first on the L4 and places both.
    devices = node("a", A100, 1) + node("b", L4, 1)
    assert solved(devices, [one(20), one(30)]) == 2


def test_a_tensor_parallel_order_needs_its_devices_on_one_node() -> None:
    assert solved(node("a", H100, 2) + node("b", H100, 2), [tp_only(4, 40)]) == 0
    assert solved(node("a", H100, 4), [tp_only(4, 40)]) == 1


def test_the_planner_tie_break_case_has_optimum_two() -> None:
    # Two H100 on node a, one on node b; an order for one device, then one for two on one node.
    # Taking a device of node a for the first leaves no pair; the optimum takes node b's.
    devices = node("a", H100, 2) + node("b", H100, 1)
    assert solved(devices, [one(60), tp_only(2, 60)]) == 2


def test_sizes_that_do_not_divide_the_node_are_packed_per_node() -> None:
    # 2 nodes of 6 devices hold 12, but only two replicas of 4 (one per node): a count of devices
    # alone (12 >= 3 x 4) would say three.
    devices = node("a", H100, 6) + node("b", H100, 6)
    assert solved(devices, [tp_only(4, 40)] * 3) == 2
    # 2 nodes of 5 hold 10 = 4 + 4 + 2 devices, but a 4 leaves 1 on its node: no room for the 2
    five = node("a", H100, 5) + node("b", H100, 5)
    assert solved(five, [tp_only(4, 40), tp_only(4, 40), tp_only(2, 40)]) == 2
    # with sizes 1 and 2, any mix up to 12 devices fits
    assert solved(devices, [tp_only(2, 40)] * 5 + [one(40)] * 2) == 7


def test_a_divisibility_chain_fills_nodes_exactly() -> None:
    devices = node("a", H100, 4) + node("b", H100, 4)
    assert solved(devices, [tp_only(4, 40), tp_only(2, 40), tp_only(2, 40), tp_only(4, 40)]) == 3
    assert solved(devices, [tp_only(4, 40), tp_only(2, 40), tp_only(2, 40), one(40)]) == 3  # 9 > 8
    assert solved(devices, [tp_only(4, 40), tp_only(2, 40), one(40), one(40)]) == 4


def test_devices_of_two_products_on_one_node_never_form_one_replica() -> None:
    devices = [*node("a", H100, 1), Device("a", "x", "A100", 40 * G, GPU, (8, 0))]
    assert solved(devices, [tp_only(2, 35)]) == 0


def test_the_compute_capability_must_reach_the_runtime_minimum() -> None:
    fp8 = one(10, min_capability=(8, 9))
    assert solved(node("a", A100, 4), [fp8]) == 0
    assert solved(node("a", L4, 1), [fp8]) == 1


def test_a_mig_device_takes_one_replica_of_one_device_only() -> None:
    two_mig = node("m", ("A100", 10 * G, (8, 0)), 2, MIG)
    assert solved(two_mig, [Demand(need={1: 15 * G, 2: 5 * G})]) == 0
    assert solved(node("m", ("A100", 20 * G, (8, 0)), 1, MIG), [Demand(need={1: 15 * G})]) == 1


def test_a_class_without_mig_never_gets_a_mig_device() -> None:
    mig = node("m", ("A100", 20 * G, (8, 0)), 3, MIG)
    assert solved(mig, [one(5, kinds=frozenset({GPU}))]) == 0
    assert solved(mig, [one(5, kinds=frozenset({GPU, MIG}))]) == 1


def test_check_names_each_broken_rule() -> None:
    a, b = node("a", H100, 2), node("b", H100, 1)
    demands = [tp_only(2, 60), one(90), one(10, min_capability=(9, 5)), one(10)]
    problems = check(demands, {0: [a[0], b[0]], 1: [a[1]], 2: [b[0]], 3: [a[1]]})
    assert any("more than one node" in p for p in problems)
    assert any("too small" in p for p in problems)
    assert sum("given twice" in p for p in problems) == 2
    assert check([one(10)], {0: a}) == ["order 0: 2 devices is no allowed size"]


# ---------------------------------------------------------------- brute force on tiny fleets


def brute(devices: Sequence[Device], demands: Sequence[Demand]) -> int:
    """The most demands placed, trying every set of devices for every demand (tiny inputs only)."""

    def fits(d: Demand, devs: tuple[Device, ...]) -> bool:
        return check([d], {0: devs}) == []

    def best(i: int, free: frozenset[Device]) -> int:
        if i == len(demands):
            return 0
        out = best(i + 1, free)
        for n in demands[i].need:
            for devs in combinations(sorted(free, key=lambda d: (d.node, d.name)), n):
                if fits(demands[i], devs):
                    out = max(out, 1 + best(i + 1, free - set(devs)))
        return out

    return best(0, frozenset(devices))


GPUS = st.sampled_from([H100, A100, L4, ("A100", 20 * G, (8, 0))])
NODES = st.lists(st.tuples(GPUS, st.integers(1, 3), st.booleans()), min_size=1, max_size=3)
DEMANDS = st.lists(
    st.tuples(
        st.sampled_from([5, 15, 30, 50, 70, 100]),
        st.sampled_from([(1,), (1, 2), (1, 2, 4), (2,)]),
        st.sampled_from([(7, 0), (8, 9)]),
    ),
    min_size=1,
    max_size=4,
)


@settings(max_examples=60, deadline=None)
@given(NODES, DEMANDS)
def test_the_solver_places_as_many_as_a_brute_force(
    nodes: list[tuple[tuple[str, int, tuple[int, int]], int, bool]],
    raw: list[tuple[int, tuple[int, ...], tuple[int, int]]],
) -> None:
    devices = [
        d
        for i, (gpu, count, is_mig) in enumerate(nodes)
        for d in node(f"n{i}", gpu, count, MIG if is_mig else GPU)
    ]
    demands = [Demand(need={n: gib * G // n for n in sizes}, min_capability=cap) for gib, sizes, cap in raw]
    assert solved(devices, demands) == brute(devices, demands)
