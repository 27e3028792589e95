"""The planner: from model facts, a class and the device inventory to a launch plan. Pure.

The controller calls ``build_inventory`` on the informer caches, then ``plan_order`` per order.
Modules: ``estimate`` (memory), ``devices`` (one device, lookups over many), ``inventory`` (what is
free: classes, allocations), ``placement`` (candidates, smallest fit), ``recipes`` (runtime matching), ``vllm`` (the runtime adapter),
``diagnose`` (the reason when nothing fits), ``selectors`` (memoised CEL over many devices),
``slices`` (reading DeviceClasses and ResourceSlices), ``ledger`` (the capacity ledger, with
``uses`` and ``roster``), ``groups``/``fleet``/``search`` (the devices grouped per device class
and class selector, and the smallest-fit search over the groups), ``launch`` (what a plan holds)
and ``plan`` (the entry point); ``preemption`` (what lower-priority orders hold that an order could
take; not wired, the scheduler does not preempt for DRA devices).
"""

from controller.planner.inventory import Device, Inventory
from controller.planner.plan import LaunchPlan, PlanOutcome, PlanRequest, plan_order
from controller.planner.slices import build_inventory

__all__ = ["Device", "Inventory", "LaunchPlan", "PlanOutcome", "PlanRequest", "build_inventory", "plan_order"]
