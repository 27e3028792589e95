"""TimeSlicing and MPS as the NVIDIA DRA driver can really do them.

- With the driver's defaults a GPU is published without ``allowMultipleAllocations``: every claim
  gets a GPU of its own, and sharing needs one claim referenced by several pods. Claims are
  namespaced, so two orders can never share such a GPU: the planner offers no sharing on it.
- With the driver's alpha ``ConsumableShares`` (``--consumable-shares=memory``) a GPU is published
  with ``allowMultipleAllocations: true`` and a consumable ``memory`` capacity, so independent claims
  of any namespace take parts of its memory: TimeSlicing is offered there. The driver refuses MPS on
  such a GPU, so MPS is never offered on a device of the NVIDIA driver.
"""

from __future__ import annotations

from typing import Any

from shared import reasons
from testkit.planner import LLAMA_8B, gpu, inventory_of, make_class, make_slice, plan


def nvidia_gpu(*, consumable_shares: bool) -> dict[str, Any]:
    """A whole H100 as the NVIDIA DRA driver publishes it, with or without ``--consumable-shares=memory``."""
    if not consumable_shares:
        return gpu("gpu-0", "NVIDIA H100 80GB HBM3", "80Gi", "9.0.0")
    memory = {
        "value": "80Gi",
        "requestPolicy": {"default": "80Gi", "validRange": {"min": "1Mi", "max": "80Gi", "step": "1Mi"}},
    }
    return gpu(
        "gpu-0",
        "NVIDIA H100 80GB HBM3",
        "80Gi",
        "9.0.0",
        allowMultipleAllocations=True,
        capacity={"memory": memory},
    )


def test_a_gpu_published_without_multiple_allocations_is_never_offered_for_sharing() -> None:
    inv = inventory_of([make_slice("h100-0", [nvidia_gpu(consumable_shares=False)])])
    for mode in ("TimeSlicing", "MPS"):
        outcome = plan(inv, LLAMA_8B, class_spec=make_class(sharingModes=[mode]))
        assert not outcome.ok, f"{mode} offered on a GPU the driver cannot share across claims"
        assert outcome.reason in (reasons.NO_CAPACITY, reasons.NO_ACCELERATOR_WITH_ENOUGH_MEMORY)


def test_the_class_then_falls_back_to_exclusive() -> None:
    inv = inventory_of([make_slice("h100-0", [nvidia_gpu(consumable_shares=False)])])
    outcome = plan(inv, LLAMA_8B, class_spec=make_class(sharingModes=["TimeSlicing", "Exclusive"]))
    assert outcome.plan is not None and outcome.plan.sharing_mode == "Exclusive"


def test_time_slicing_is_offered_on_a_gpu_published_with_consumable_shares() -> None:
    inv = inventory_of([make_slice("h100-0", [nvidia_gpu(consumable_shares=True)])])
    outcome = plan(inv, LLAMA_8B, class_spec=make_class(sharingModes=["TimeSlicing"]))
    assert outcome.plan is not None and outcome.plan.sharing_mode == "TimeSlicing"
    assert outcome.plan.capacity_requests is not None and "memory" in outcome.plan.capacity_requests


def test_mps_is_never_offered_on_a_gpu_of_the_nvidia_driver() -> None:
    inv = inventory_of([make_slice("h100-0", [nvidia_gpu(consumable_shares=True)])])
    outcome = plan(inv, LLAMA_8B, class_spec=make_class(sharingModes=["MPS"]))
    assert not outcome.ok
    fallback = plan(inv, LLAMA_8B, class_spec=make_class(sharingModes=["MPS", "TimeSlicing"]))
    assert fallback.plan is not None and fallback.plan.sharing_mode == "TimeSlicing"


def test_mps_stays_possible_for_another_driver_that_shares_across_claims() -> None:
    device = nvidia_gpu(consumable_shares=True)
    sl = make_slice("h100-0", [device], driver="gpu.example.com")
    expression = "device.driver == 'gpu.example.com'"
    cls = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu.example.com"},
           "spec": {"selectors": [{"cel": {"expression": expression}}]}}  # fmt: skip
    inv = inventory_of([sl], classes=[cls])
    outcome = plan(
        inv, LLAMA_8B, class_spec=make_class(deviceClassNames=["gpu.example.com"], sharingModes=["MPS"])
    )
    assert outcome.plan is not None and outcome.plan.sharing_mode == "MPS"
