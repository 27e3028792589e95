"""The claim template: the NVIDIA DRA driver's opaque sharing config for TimeSlicing and MPS
(resource.nvidia.com/v1beta1 GpuConfig / MigDeviceConfig), nothing for Exclusive and MIG."""

from __future__ import annotations

import json
from typing import Any

from controller import render
from shared import names
from tests.unit.controller.builders import make_order
from tests.unit.controller.test_render import Plan


def devices(plan: Plan) -> dict[str, Any]:
    tpl = render.resource_claim_template(make_order(), plan)
    out: dict[str, Any] = tpl["spec"]["spec"]["devices"]
    return out


def test_an_exclusive_or_mig_claim_carries_no_config() -> None:
    assert "config" not in devices(Plan())
    assert "config" not in devices(Plan(device_class="mig.nvidia.com", sharing_mode="MIG", share_percent=43))


def test_time_slicing_renders_the_drivers_gpu_config_with_an_interval() -> None:
    (config,) = devices(Plan(sharing_mode="TimeSlicing", share_percent=25))["config"]
    assert config == {
        "requests": ["gpu"],
        "opaque": {
            "driver": "gpu.nvidia.com",
            "parameters": {
                "apiVersion": "resource.nvidia.com/v1beta1",
                "kind": "GpuConfig",
                "sharing": {"strategy": "TimeSlicing", "timeSlicingConfig": {"interval": "Default"}},
            },
        },
    }


def test_mps_takes_its_active_thread_percentage_from_the_share() -> None:
    (config,) = devices(Plan(sharing_mode="MPS", share_percent=30))["config"]
    assert config["opaque"]["parameters"]["sharing"] == {
        "strategy": "MPS",
        "mpsConfig": {"defaultActiveThreadPercentage": 30},
    }


def test_sharing_a_mig_device_uses_the_mig_device_config_which_has_no_interval() -> None:
    ts = render.sharing_config(Plan(device_class="mig.nvidia.com", sharing_mode="TimeSlicing"))
    mps = render.sharing_config(Plan(device_class="mig.nvidia.com", sharing_mode="MPS", share_percent=50))
    assert ts is not None and mps is not None
    assert ts["opaque"]["parameters"]["kind"] == "MigDeviceConfig"
    assert ts["opaque"]["parameters"]["sharing"] == {"strategy": "TimeSlicing"}
    assert mps["opaque"]["parameters"]["sharing"]["mpsConfig"] == {"defaultActiveThreadPercentage": 50}


def test_a_new_sharing_config_gets_a_new_template_name_and_exclusive_names_are_unchanged() -> None:
    order = make_order()
    ts = render.claim_template_name(order, Plan(sharing_mode="TimeSlicing"))
    mps = render.claim_template_name(order, Plan(sharing_mode="MPS"))
    assert ts != mps
    exclusive = render.claim_template_name(order, Plan())
    assert exclusive.endswith(names.short_hash(json.dumps(render.claim_request(Plan()))))
