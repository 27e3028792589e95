"""Regressions of bugs bench/chaos found.

An edited order's old model volume: on the branch's base the shipped ClusterRole had no `delete` on
persistentvolumeclaims while the controller pruned the old volume, so an edited order ended
WorkloadReady=False/WorkloadFailed (forbidden). With main merged (1 December 2026) this passes
under the shipped RBAC."""

from __future__ import annotations

import json

import pytest

from testkit.platform import Platform, hf
from tests.integration.conftest import wait_for

pytestmark = pytest.mark.cluster


def volumes(p: Platform, ns: str) -> list[str]:
    out = json.loads(p.kubectl("get", "pvc", "-n", ns, "-o", "json").stdout)["items"]
    return sorted(o["metadata"]["name"] for o in out if not o["metadata"].get("deletionTimestamp"))


def test_an_edited_order_is_ready_again_and_its_old_model_volume_is_deleted(
    platform: Platform, ns: str
) -> None:
    platform.create_order(ns, "edited", hf("Qwen/Qwen2.5-0.5B-Instruct"))
    platform.wait_phase(ns, "edited", "Ready", timeout=120)
    platform.create_order(ns, "edited", hf("sentence-transformers/all-MiniLM-L6-v2"))
    platform.wait_phase(ns, "edited", "Ready", timeout=120)
    wait_for(lambda: volumes(platform, ns), lambda v: len(v) == 1, timeout=60, message="one model volume")
    wait_for(
        lambda: platform.order(ns, "edited"),
        lambda o: platform.condition(o, "Ready").get("status") == "True",
        timeout=20,
        message="still Ready after the old volume's prune",
    )
