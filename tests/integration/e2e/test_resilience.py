"""Serving orders survive the Hub and restarts: the resolved model is a record, the revision is
pinned, and N orders of one model cost O(1) Hub calls (counted at the mirror).

"Nothing changed after a restart" is checked only once the restarted controller has reconciled the
order: the controller asks for a health probe at the end of a reconcile, after its writes, so a
probe the runtime stand-in served after the restart proves the order went through decide and act.
"""

from __future__ import annotations

import dataclasses
import json
import time
from typing import Any
from urllib.parse import urlsplit

import pytest

from testkit.platform import Platform, hf
from tests.integration.conftest import wait_for

pytestmark = pytest.mark.cluster

SMALL = "Qwen/Qwen2.5-0.5B-Instruct"
Obj = dict[str, Any]


def model_info_calls(p: Platform) -> int:
    return sum(1 for r in p.mirror.requests() if r.kind == "model_info")


def phases(p: Platform, ns: str) -> dict[str, str | None]:
    items = json.loads(p.kubectl("get", "inferenceservices", "-n", ns, "-o", "json").stdout)["items"]
    return {o["metadata"]["name"]: (o.get("status") or {}).get("phase") for o in items}


def probes_served(p: Platform, ns: str, name: str) -> int:
    """How many health probes of the order the runtime stand-in has answered 200."""
    host = urlsplit(p.order(ns, name)["status"]["endpoint"]["url"]).hostname
    return sum(
        1
        for r in p.runtime.requests()
        if r["host"] == host and r["path"] == "/v1/models" and r["status"] == 200
    )


def wait_reconciled(p: Platform, ns: str, name: str, *, probes_before: int) -> None:
    """Until the running controller has reconciled the order: one more probe than ``probes_before``."""
    wait_for(
        lambda: probes_served(p, ns, name),
        lambda n: n > probes_before,
        timeout=60,
        message=f"a probe of {ns}/{name} from the restarted controller",
    )


def test_a_restart_with_the_hub_down_keeps_every_ready_order_ready_and_asks_the_hub_nothing(
    platform: Platform, ns: str
) -> None:
    for name in ("a", "b"):
        platform.create_order(ns, name, hf(SMALL))
    for name in ("a", "b"):
        platform.wait_phase(ns, name, "Ready", timeout=120)
    platform.controller.kill()
    platform.mirror.inject_fault(503)
    try:
        platform.mirror.clear_requests()
        before = {name: probes_served(platform, ns, name) for name in ("a", "b")}
        platform.controller.start()
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:  # the restart reconciles every order at once
            assert phases(platform, ns) == {"a": "Ready", "b": "Ready"}
            time.sleep(1)
        for name in ("a", "b"):
            wait_reconciled(platform, ns, name, probes_before=before[name])
        assert phases(platform, ns) == {"a": "Ready", "b": "Ready"}
        assert platform.mirror.requests() == []
    finally:
        platform.mirror.clear_faults()


def test_a_new_upstream_commit_does_not_roll_a_serving_order(platform: Platform, ns: str) -> None:
    platform.create_order(ns, "pinned", hf(SMALL))
    before = platform.wait_phase(ns, "pinned", "Ready", timeout=120)
    sha = before["status"]["model"]["revision"]
    dep = platform.get("deployment", "pinned", ns)
    assert dep is not None
    assert sha in json.dumps(dep["spec"]["template"]), "the workload runs the pinned commit"
    repos = platform.mirror.state.repos
    old = repos[SMALL]
    repos[SMALL] = dataclasses.replace(old, sha="f" * 40)
    try:
        platform.controller.kill()
        probes_before = probes_served(platform, ns, "pinned")
        platform.controller.start()  # forget every in-process cache; the record must stand alone
        wait_reconciled(platform, ns, "pinned", probes_before=probes_before)
        after = platform.order(ns, "pinned")
        dep_after = platform.get("deployment", "pinned", ns)
        assert dep_after is not None
        assert after["status"]["model"]["revision"] == sha
        assert dep_after["metadata"]["generation"] == dep["metadata"]["generation"]
        assert after["status"]["resolved"]["replanCount"] == before["status"]["resolved"]["replanCount"]
    finally:
        repos[SMALL] = old


def test_twenty_orders_of_one_model_cost_one_resolution_at_start(platform: Platform, ns: str) -> None:
    platform.controller.stop()
    try:
        for i in range(20):
            platform.create_order(ns, f"m{i:02d}", hf(SMALL))
        platform.mirror.clear_requests()
    finally:
        platform.controller.start()

    def resolved() -> int:
        items = json.loads(platform.kubectl("get", "inferenceservices", "-n", ns, "-o", "json").stdout)[
            "items"
        ]
        return sum(
            1
            for o in items
            for c in (o.get("status") or {}).get("conditions") or []
            if c["type"] == "ModelResolved" and c["status"] == "True"
        )

    wait_for(resolved, lambda n: n == 20, timeout=180, message="every order's model resolved")
    assert model_info_calls(platform) <= 2, [r.path for r in platform.mirror.requests()]
