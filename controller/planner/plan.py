"""The planner's entry point: ``plan_order(PlanRequest) -> PlanOutcome``. Pure and deterministic.

The checks run in this order, and the first failure is the answer (Planned=False with its reason):

1. PlacementUndecidable: the class's selector does not compile, a device class does not exist or
   its own selector fails, or the class's selector fails on a device.
2. NoCompatibleRuntimeAvailable: no recipe serves the endpoint type, format and architecture, or
   none knows the model's quantization method, or the model is a ``*ForCausalLM`` reranker whose
   conversion vLLM does not document (``rerankers``).
3. ResourceClaimExhausted: every allowed device class is in ``skip_device_classes``.
4. The search: device classes in the class's order, sharing modes in its order, smallest fit
   first. An unchanged plan stays on the devices the order already holds.
5. The diagnosis when the search is empty: QuantizationMismatch (no allowed device reaches the
   method's compute capability), NoAcceleratorWithEnoughMemory (none could hold it even on an
   empty cluster), else NoCapacity.

The search and the diagnosis read the inventory's devices grouped per device class and class
selector (``fleet.FleetGroups``: kept by the ledger across orders, built once per inventory
otherwise), never the devices one by one: see ``search``. What a plan holds: ``launch``.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

from controller.planner.diagnose import diagnose
from controller.planner.estimate import MemoryEstimate, estimate_memory
from controller.planner.groups import ClassGroups
from controller.planner.inventory import Inventory, fleet_groups
from controller.planner.launch import LaunchPlan, PlanOutcome, PlanRequest, fail, planned
from controller.planner.placement import candidates, tensor_parallel_sizes
from controller.planner.recipes import RecipeChoice, model_recipes, ordered_recipes, quantization_method
from controller.planner.rerankers import unsupported_reranker
from controller.planner.search import Taken, best, recipes_by_capability
from shared import reasons
from shared.cel import CelError, Selector, compile_selector

DEFAULT_MAX_ACCELERATORS = 8

__all__ = ["DEFAULT_MAX_ACCELERATORS", "LaunchPlan", "PlanOutcome", "PlanRequest", "plan_order"]


@functools.lru_cache(maxsize=64)
def _compiled(expression: str) -> Selector:
    """Compiled class selectors, kept: compiling costs more than a whole plan."""
    return compile_selector(expression)


def plan_order(request: PlanRequest) -> PlanOutcome:
    spec, inv, facts = request.class_spec, request.inventory, request.facts
    placement = spec.placement

    selector: Selector | None = None
    if placement.selector:
        try:
            selector = _compiled(placement.selector)
        except CelError as e:
            return fail(
                reasons.PLACEMENT_UNDECIDABLE,
                f"`spec.placement.selector` of the class does not compile: {e}.",
            )
    for name in placement.device_class_names:
        if name not in inv.device_classes:
            return fail(
                reasons.PLACEMENT_UNDECIDABLE, f"DeviceClass {name} named by the class does not exist."
            )
        if name in inv.device_class_errors:
            return fail(reasons.PLACEMENT_UNDECIDABLE, inv.device_class_errors[name] + ".")

    recipes = ordered_recipes(request.recipes, spec.recipes)
    fitting = model_recipes(recipes, facts, request.endpoint_type)
    if not fitting:
        names = ", ".join(r.metadata.name for r in recipes) or "none"
        return fail(
            reasons.NO_COMPATIBLE_RUNTIME_AVAILABLE,
            f"no recipe of the class serves {request.endpoint_type} for a {facts.format} "
            f"{facts.architecture or 'model'} (recipes: {names}).",
        )
    refusal = unsupported_reranker(facts, request.endpoint_type)
    if refusal is not None:
        return fail(reasons.NO_COMPATIBLE_RUNTIME_AVAILABLE, refusal)
    method = quantization_method(facts)
    choices = [c for c in fitting if c.min_capability is not None]
    if not choices:
        return fail(
            reasons.NO_COMPATIBLE_RUNTIME_AVAILABLE,
            f"no recipe of the class knows the quantization {facts.quantization_label} "
            f"(recipes: {', '.join(c.name for c in fitting)}).",
        )

    allowed = [c for c in placement.device_class_names if c not in request.skip_device_classes]
    if not allowed:
        return fail(
            reasons.RESOURCE_CLAIM_EXHAUSTED,
            "the scheduler could not allocate the claim on any allowed device class "
            f"({', '.join(placement.device_class_names)}).",
        )

    fleet = fleet_groups(inv)
    eligible = {c: fleet.view(c, selector) for c in allowed}
    errors = [failed for g in eligible.values() if (failed := g.first_error()) is not None]
    error = min(errors, default=None)
    if error is not None:
        return fail(reasons.PLACEMENT_UNDECIDABLE, error[1])

    estimate = estimate_memory(facts)
    modes = list(placement.sharing_modes or ["Exclusive"])
    max_devices = placement.max_accelerators_per_replica or DEFAULT_MAX_ACCELERATORS
    tp_sizes = tensor_parallel_sizes(max_devices, facts.num_attention_heads)

    kept = _keep_previous(request, eligible, estimate, choices, tp_sizes)
    if kept is not None:
        return kept

    taken = Taken.of(inv)
    recipe_for = recipes_by_capability(choices)
    for device_class in allowed:
        for mode in modes:
            found = best(
                device_class=device_class,
                mode=mode,
                groups=eligible[device_class],
                taken=taken,
                estimate=estimate,
                recipe_for=recipe_for,
                tp_sizes=tp_sizes,
            )
            if found is not None:
                return planned(request, found, estimate, method)
    if "Exclusive" in modes and (placement.max_nodes_per_replica or 1) > 1:
        from controller.planner.multinode_plan import plan_multinode  # it builds on this module

        spread = plan_multinode(request, eligible, estimate, choices, max_devices)
        if spread is not None:
            return spread
    reason, message = diagnose(
        facts=facts,
        eligible=eligible,
        modes=modes,
        estimate=estimate,
        choices=choices,
        tp_sizes=tp_sizes,
        method=method,
        holds_devices=bool(inv.held),
    )
    skipped = [c for c in placement.device_class_names if c in request.skip_device_classes]
    if skipped and reason != reasons.NO_CAPACITY:
        # A fallback: the order fits a class the scheduler could not allocate on, so what the
        # remaining classes cannot do is no reason to give up on it (never a terminal reason).
        return fail(
            reasons.RESOURCE_CLAIM_EXHAUSTED,
            f"the scheduler could not allocate the claim on {', '.join(skipped)}, and the other allowed "
            f"classes cannot hold the model: {message}",
        )
    return fail(reason, message)


def _keep_previous(
    request: PlanRequest,
    eligible: dict[str, ClassGroups],
    estimate: MemoryEstimate,
    choices: Sequence[RecipeChoice],
    tp_sizes: Sequence[int],
) -> PlanOutcome | None:
    """The previous plan's hardware, on the devices the order holds, when it still fits and is allowed."""
    prev, inv = request.previous, request.inventory
    if prev is None or not inv.held or prev.device_class not in eligible:
        return None
    modes = request.class_spec.placement.sharing_modes or ["Exclusive"]
    if prev.sharing_mode not in modes:
        return None
    members = eligible[prev.device_class].members
    held = sorted(
        (members[k] for k in inv.held if k in members and members[k][0].product_name == prev.product_name),
        key=lambda m: m[1],
    )
    if not held:
        return None
    devices = tuple(d for d, _ in held)
    free_inv = Inventory(devices=devices, device_classes=inv.device_classes)
    found = candidates(
        device_class=prev.device_class,
        mode=prev.sharing_mode,
        devices=devices,
        inventory=free_inv,
        busy=frozenset(),
        estimate=estimate,
        choices=choices,
        tp_sizes=tp_sizes,
    )
    if not found:
        return None
    return planned(request, found[0], estimate, quantization_method(request.facts))
