"""The ResourceClaimTemplate of the planned devices (DRA, ``resource.k8s.io/v1``). Pure.

For TimeSlicing and MPS the claim carries the NVIDIA DRA driver's opaque configuration, as the
driver's API (``resource.nvidia.com/v1beta1``) defines it: a ``GpuConfig`` for whole GPUs or a
``MigDeviceConfig`` for MIG devices, whose ``sharing`` names the strategy. TimeSlicing takes an
``interval`` (Default, Short, Medium, Long; MIG devices take none); MPS takes
``defaultActiveThreadPercentage``, here the plan's ``sharePercent``. The driver applies it only with
its feature gates ``TimeSlicingSettings`` and ``MPSSupport`` (docs/admin-guide.md).
"""

from __future__ import annotations

import json

from controller.render.common import Obj, PlanView, labels, meta
from shared import names
from shared.api.order import InferenceService

NVIDIA_DRIVER = "gpu.nvidia.com"
NVIDIA_CONFIG_API = "resource.nvidia.com/v1beta1"
MIG_DEVICE_CLASS = "mig.nvidia.com"
TIME_SLICE_INTERVAL = "Default"  # the driver's Default | Short | Medium | Long


def claim_request(plan: PlanView) -> Obj:
    exactly: Obj = {
        "deviceClassName": plan.device_class,
        "allocationMode": "ExactCount",
        "count": plan.devices_per_pod,
    }
    if plan.device_selectors:
        exactly["selectors"] = [{"cel": {"expression": e}} for e in plan.device_selectors]
    if plan.capacity_requests:
        exactly["capacity"] = {"requests": dict(plan.capacity_requests)}
    return {"name": names.CLAIM_NAME, "exactly": exactly}


def sharing_config(plan: PlanView) -> Obj | None:
    """The driver's opaque config for a shared plan; None for Exclusive and MIG (nothing to configure)."""
    mode = plan.sharing_mode
    if mode not in ("TimeSlicing", "MPS"):
        return None
    mig = plan.device_class == MIG_DEVICE_CLASS
    sharing: Obj = {"strategy": mode}
    if mode == "TimeSlicing" and not mig:
        sharing["timeSlicingConfig"] = {"interval": TIME_SLICE_INTERVAL}
    if mode == "MPS":
        sharing["mpsConfig"] = {"defaultActiveThreadPercentage": max(1, min(100, plan.share_percent))}
    return {
        "requests": [names.CLAIM_NAME],
        "opaque": {
            "driver": NVIDIA_DRIVER,
            "parameters": {
                "apiVersion": NVIDIA_CONFIG_API,
                "kind": "MigDeviceConfig" if mig else "GpuConfig",
                "sharing": sharing,
            },
        },
    }


def claim_devices(plan: PlanView) -> Obj:
    """The ``spec.devices`` of the claim: the request, and the sharing config when there is one."""
    devices: Obj = {"requests": [claim_request(plan)]}
    config = sharing_config(plan)
    if config is not None:
        devices["config"] = [config]
    return devices


def claim_template_name(order: InferenceService, plan: PlanView) -> str:
    """ResourceClaimTemplate specs are immutable, so a new plan gets a new template name."""
    key = json.dumps(claim_devices(plan), sort_keys=True)
    if sharing_config(plan) is None:
        key = json.dumps(claim_request(plan))  # unchanged for unshared plans: no churn on upgrade
    return f"{names.claim_template(order.metadata.name)}-{names.short_hash(key)}"


def resource_claim_template(order: InferenceService, plan: PlanView) -> Obj:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": meta(order, claim_template_name(order, plan)),
        "spec": {
            "metadata": {"labels": labels(order)},
            "spec": {"devices": claim_devices(plan)},
        },
    }
