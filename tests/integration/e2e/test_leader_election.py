"""Two controller replicas on one Lease: one reconciles, the other takes over when the leader dies."""

from __future__ import annotations

import uuid

import pytest

from devtools.product.controller import ControllerProcess
from testkit.platform import Platform, hf
from tests.integration.conftest import wait_for

pytestmark = pytest.mark.cluster

SMALL = "Qwen/Qwen2.5-0.5B-Instruct"


def leading(c: ControllerProcess) -> bool:
    for line in c.metrics().splitlines():
        if line.startswith("inference_controller_leader "):
            return float(line.split()[1]) == 1.0
    return False


def test_one_replica_leads_and_the_other_takes_over_when_it_dies(platform: Platform, ns: str) -> None:
    lease = "inference-controller"  # the one Lease the shipped Role lets the controller update
    args = (
        "--leader-elect",
        "--lease-name",
        lease,
        "--lease-duration",
        "6",
        "--renew-deadline",
        "4",
        "--retry-period",
        "1",
    )
    platform.controller.stop()
    replicas = [
        ControllerProcess(
            kubeconfig=platform.controller.kubeconfig,
            env=platform.controller.env,
            log_dir=platform.controller.log_dir,
            args=(*args, "--identity", f"replica-{i}-{uuid.uuid4().hex[:4]}"),
            name=f"replica-{i}",
        )
        for i in range(2)
    ]
    try:
        for r in replicas:
            r.start()
        leaders = wait_for(
            lambda: [leading(r) for r in replicas],
            lambda v: sum(v) == 1,
            timeout=30,
            message="exactly one leader",
        )
        leader, standby = (replicas[0], replicas[1]) if leaders[0] else (replicas[1], replicas[0])
        platform.create_order(ns, "first", hf(SMALL))
        platform.wait_phase(ns, "first", "Ready", timeout=90)
        assert not leading(standby), "the standby must not reconcile"
        leader.kill()
        platform.create_order(ns, "second", hf(SMALL))
        platform.wait_phase(ns, "second", "Ready", timeout=90)
        assert leading(standby)
    finally:
        for r in replicas:
            r.stop()
        platform.controller.start()
