"""TimeSlicing and MPS are offered only on devices that allow several allocations.

The NVIDIA DRA driver publishes no such device (it has no ``allowMultipleAllocations``, the
consumable-capacity route of KEP-5075): with it, sharing needs one ResourceClaim that several pods
reference, and claims are namespaced, so two orders can never share one of its GPUs. The planner
must then not offer sharing at all (docs/admin-guide.md, "Accelerator sharing").
"""

from __future__ import annotations

from shared import reasons
from tests.unit.planner.builders import LLAMA_8B, gpu, inventory_of, make_class, make_slice, plan


def nvidia_gpu(name: str) -> dict[str, object]:
    """A whole GPU as the NVIDIA DRA driver publishes it: no allowMultipleAllocations."""
    return gpu(name, "NVIDIA H100 80GB HBM3", "80Gi", "9.0.0")


def test_a_gpu_as_the_nvidia_driver_publishes_it_is_never_offered_for_sharing() -> None:
    inv = inventory_of([make_slice("h100-0", [nvidia_gpu("gpu-0")])])
    for mode in ("TimeSlicing", "MPS"):
        outcome = plan(inv, LLAMA_8B, class_spec=make_class(sharingModes=[mode]))
        assert not outcome.ok, f"{mode} offered on a device the driver cannot share across claims"
        assert outcome.reason in (reasons.NO_CAPACITY, reasons.NO_ACCELERATOR_WITH_ENOUGH_MEMORY)


def test_the_class_falls_back_to_exclusive_on_such_a_gpu() -> None:
    inv = inventory_of([make_slice("h100-0", [nvidia_gpu("gpu-0")])])
    outcome = plan(inv, LLAMA_8B, class_spec=make_class(sharingModes=["TimeSlicing", "Exclusive"]))
    assert outcome.plan is not None and outcome.plan.sharing_mode == "Exclusive"


def test_a_device_that_allows_multiple_allocations_can_be_shared() -> None:
    shared = gpu(
        "gpu-0",
        "NVIDIA H100 80GB HBM3",
        "80Gi",
        "9.0.0",
        allowMultipleAllocations=True,
        capacity={
            "memory": {"value": "80Gi", "requestPolicy": {"default": "1Gi", "validRange": {"min": "1Gi"}}}
        },
    )
    outcome = plan(
        inventory_of([make_slice("h100-0", [shared])]), LLAMA_8B, class_spec=make_class(sharingModes=["MPS"])
    )
    assert outcome.plan is not None and outcome.plan.sharing_mode == "MPS"
