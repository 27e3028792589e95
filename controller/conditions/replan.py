"""When to (re)compute the launch plan, and how replanCount moves. Pure.

A plan is computed only on a trigger; otherwise the plan in force (kept in the Deployment's
annotation) is reused, so a controller restart or a no-op resync never replans. replanCount counts
recomputations after the first plan: an edit of the order (its generation), a class policy change
(the class's generation), or a fallback to the next device class after the scheduler could not
allocate the claim.
"""

from __future__ import annotations

from dataclasses import dataclass

from shared.api.order import Resolved


@dataclass(frozen=True, slots=True)
class PlanDecision:
    compute: bool  # run the planner now
    count: bool  # this computation is a replan: replanCount + 1
    trigger: str  # why, for messages: "", "order edit", "class change", "fallback", "no plan yet"
    tried: tuple[str, ...]  # device classes to skip


def decide_plan(
    previous: Resolved | None,
    *,
    has_plan_in_force: bool,
    order_generation: int,
    class_generation: int,
    stuck_device_class: str | None,
) -> PlanDecision:
    """``stuck_device_class`` is the planned device class when its claim stayed unallocatable past the grace."""
    tried = tuple(previous.tried_device_classes or ()) if previous else ()
    if previous is None or previous.order_generation is None:
        return PlanDecision(True, False, "no plan yet", ())
    if previous.order_generation != order_generation:
        return PlanDecision(True, has_plan_in_force, "order edit", ())
    if previous.class_generation != class_generation:
        return PlanDecision(True, has_plan_in_force, "class change", ())
    if stuck_device_class is not None and has_plan_in_force and stuck_device_class not in tried:
        return PlanDecision(True, True, "fallback", (*tried, stuck_device_class))
    if not has_plan_in_force:
        return PlanDecision(True, False, "no plan yet", tried)
    return PlanDecision(False, False, "", tried)
