"""Why the search came up empty: QuantizationMismatch, NoAcceleratorWithEnoughMemory or NoCapacity.

Called by ``plan_order`` only when no free candidate fits. Pure. The message names the estimate
per replica and what the allowed devices offer, so a person can act on it.
"""

from __future__ import annotations

from collections.abc import Sequence

from controller.facts import ModelFacts
from controller.planner.estimate import MemoryEstimate
from controller.planner.inventory import Device
from controller.planner.placement import Candidate, best_candidate
from controller.planner.recipes import RecipeChoice, runs_on
from shared import reasons
from shared.cel import Semver
from shared.quantity import GIB, format_gib


def diagnose(
    *,
    facts: ModelFacts,
    eligible: dict[str, list[Device]],
    modes: Sequence[str],
    estimate: MemoryEstimate,
    choices: Sequence[RecipeChoice],
    tp_sizes: Sequence[int],
    method: str,
    holds_devices: bool,
) -> tuple[str, str]:
    """The reason and message for an empty search over the ``eligible`` devices of each class."""
    devices = sorted({d.key: d for ds in eligible.values() for d in ds}.values(), key=lambda d: d.key)
    util = max(c.recipe.spec.gpu_memory_utilization or 0.9 for c in choices)
    need = estimate.per_device_need(1, util)
    if not devices:
        return (
            reasons.NO_ACCELERATOR_WITH_ENOUGH_MEMORY,
            f"needs {format_gib(need)} per replica; no device of {', '.join(eligible)} matches the class's "
            "placement.",
        )
    capable = [d for d in devices if any(runs_on(c, d.compute_capability) for c in choices)]
    if not capable:
        least = min(c.min_capability for c in choices if c.min_capability is not None)
        best = max(devices, key=lambda d: (d.compute_capability or Semver(0, 0, 0), d.product_name))
        cap = best.compute_capability
        reach = f"{cap.major}.{cap.minor}" if cap else "an unknown capability"
        return (
            reasons.QUANTIZATION_MISMATCH,
            f"{facts.name} needs compute capability {least.major}.{least.minor} or more for {method}; "
            f"the allowed devices reach at most {reach} ({best.product_name}).",
        )
    capable_keys = {d.key for d in capable}
    ever: list[Candidate] = []
    for device_class, ds in eligible.items():
        for mode in modes:
            found = best_candidate(
                device_class=device_class,
                mode=mode,
                devices=[d for d in ds if d.key in capable_keys],
                inventory=None,
                busy=frozenset(),
                estimate=estimate,
                choices=choices,
                tp_sizes=tp_sizes,
            )
            if found is not None:
                ever.append(found)
    if not ever:
        largest = max(capable, key=lambda d: (d.memory_bytes, d.product_name))
        per_node: dict[str, int] = {}
        for d in capable:
            if d.product_name == largest.product_name and d.kind != "mig":
                per_node[d.node] = per_node.get(d.node, 0) + 1
        most = max((n for n in tp_sizes if n <= max(per_node.values(), default=1)), default=1)
        tp = f" (up to {most} on one node: {most * largest.memory_bytes // GIB} GiB)" if most > 1 else ""
        return (
            reasons.NO_ACCELERATOR_WITH_ENOUGH_MEMORY,
            f"needs {format_gib(need)} per replica; largest allowed device is {largest.product_name} with "
            f"{largest.memory_bytes // GIB} GiB{tp}.",
        )
    smallest = min(ever, key=Candidate.sort_key)
    beyond = " beyond the place this order already holds" if holds_devices else ""
    return (
        reasons.NO_CAPACITY,
        f"needs {format_gib(need)} per replica; {smallest.count} x {smallest.first.product_name} "
        f"({smallest.sharing_mode}) would hold it, but no such device is free now{beyond}.",
    )
