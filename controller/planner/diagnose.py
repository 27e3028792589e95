"""Why the search came up empty: QuantizationMismatch, NoAcceleratorWithEnoughMemory or NoCapacity.

Called by ``plan_order`` only when no free candidate fits. Pure. The message names the estimate
per replica and what the allowed devices offer, so a person can act on it. It reads the group
summaries of the allowed classes (``groups``), not the devices: the search on an empty cluster is
the same group search as the plan's, with nothing taken.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from controller.model_facts.facts import ModelFacts
from controller.planner.estimate import MemoryEstimate
from controller.planner.groups import ClassGroups
from controller.planner.placement import Candidate
from controller.planner.recipes import RecipeChoice, runs_on
from controller.planner.search import Taken, best, recipes_by_capability
from shared import reasons
from shared.cel import Semver
from shared.quantity import GIB, format_gib

Kind = tuple[str, int, Semver | None, bool]  # product, memory, capability, is MIG


def diagnose(
    *,
    facts: ModelFacts,
    eligible: dict[str, ClassGroups],
    modes: Sequence[str],
    estimate: MemoryEstimate,
    choices: Sequence[RecipeChoice],
    tp_sizes: Sequence[int],
    method: str,
    holds_devices: bool,
) -> tuple[str, str]:
    """The reason and message for an empty search over the ``eligible`` devices of each class."""
    util = max(c.recipe.spec.gpu_memory_utilization or 0.9 for c in choices)
    need = estimate.per_device_need(1, util)
    kinds = _kinds(eligible.values())
    if not kinds:
        return (
            reasons.NO_ACCELERATOR_WITH_ENOUGH_MEMORY,
            f"needs {format_gib(need)} per replica; no device of {', '.join(eligible)} matches the class's "
            "placement.",
        )
    capable = [k for k in kinds if any(runs_on(c, k[2]) for c in choices)]
    if not capable:
        return reasons.QUANTIZATION_MISMATCH, _mismatch(facts, eligible.values(), kinds, choices, method)
    recipe_for = recipes_by_capability(choices)
    smallest: Candidate | None = None
    for device_class, groups in eligible.items():
        for mode in modes:
            found = best(
                device_class=device_class,
                mode=mode,
                groups=groups,
                taken=Taken.nothing(),
                estimate=estimate,
                recipe_for=recipe_for,
                tp_sizes=tp_sizes,
            )
            if found is not None and (smallest is None or found.sort_key() < smallest.sort_key()):
                smallest = found
    if smallest is None:
        product, memory = max((k[1], k[0]) for k in capable)[::-1]
        most = _most_on_one_node(eligible.values(), product, capable, tp_sizes)
        tp = f" (up to {most} on one node: {most * memory // GIB} GiB)" if most > 1 else ""
        return (
            reasons.NO_ACCELERATOR_WITH_ENOUGH_MEMORY,
            f"needs {format_gib(need)} per replica; largest allowed device is {product} with "
            f"{memory // GIB} GiB{tp}.",
        )
    beyond = " beyond the place this order already holds" if holds_devices else ""
    return (
        reasons.NO_CAPACITY,
        f"needs {format_gib(need)} per replica; {smallest.count} x {smallest.first.product_name} "
        f"({smallest.sharing_mode}) would hold it, but no such device is free now{beyond}.",
    )


def _kinds(views: Collection[ClassGroups]) -> set[Kind]:
    out: set[Kind] = set()
    for groups in views:
        out.update((p, m, c, False) for p, m, c in groups.exclusive)
        out.update((p, m, c, True) for m, p, c in groups.mig)
    return out


def _mismatch(
    facts: ModelFacts,
    views: Collection[ClassGroups],
    kinds: set[Kind],
    choices: Sequence[RecipeChoice],
    method: str,
) -> str:
    """No allowed device reaches a recipe's capability: the most capable one, named.

    Devices tie on (capability, product); only an unknown capability and 0.0.0 tie with
    different words, and then the device first by key decides, as ``max`` over them did."""
    least = min(c.min_capability for c in choices if c.min_capability is not None)
    zero = Semver(0, 0, 0)
    top = max((k[2] or zero, k[0]) for k in kinds)
    tied = [k for k in kinds if (k[2] or zero, k[0]) == top]
    cap = tied[0][2]
    if len({k[2] is None for k in tied}) > 1:
        first = min(
            (key, d.compute_capability)
            for groups in views
            for key, (d, _) in groups.members.items()
            if (d.compute_capability or zero, d.product_name) == top
        )
        cap = first[1]
    reach = f"{cap.major}.{cap.minor}" if cap else "an unknown capability"
    return (
        f"{facts.name} needs compute capability {least.major}.{least.minor} or more for {method}; "
        f"the allowed devices reach at most {reach} ({top[1]})."
    )


def _most_on_one_node(
    views: Collection[ClassGroups], product: str, capable: list[Kind], tp_sizes: Sequence[int]
) -> int:
    """The largest tensor-parallel size with that many capable whole devices of ``product`` on one node."""
    wanted = {(p, m, c) for p, m, c, mig in capable if p == product and not mig}
    found = [g.exclusive[k] for g in views for k in wanted if k in g.exclusive]
    if len(found) == 1:
        return max((n for n in tp_sizes if found[0].at_least.get(n)), default=1)
    per_node: dict[str, set[object]] = {}
    for group in found:
        for node, entries in group.nodes.items():
            per_node.setdefault(node, set()).update(e[3] for e in entries)
    top = max((len(keys) for keys in per_node.values()), default=1)
    return max((n for n in tp_sizes if n <= top), default=1)
