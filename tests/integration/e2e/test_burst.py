"""Many orders at once on the real plane: every status true, no double booking, waiting orders get
the next free place, and SIGKILLs of the controller change nothing of the end state."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
import yaml

from testkit.platform import Platform, controller_writes, hf
from tests.integration.conftest import wait_for

pytestmark = pytest.mark.cluster

SMALL = "Qwen/Qwen2.5-0.5B-Instruct"
CLASSES = ("gpu.nvidia.com", "mig.nvidia.com")
Obj = dict[str, Any]


def burst_class(p: Platform) -> str:
    return p.create_class(
        {
            "placement": {
                "deviceClassNames": list(CLASSES),
                "sharingModes": ["Exclusive", "MIG"],
                "maxAcceleratorsPerReplica": 1,
            },
            "scaling": {"minReplicas": 1, "maxReplicas": 1},
        },
        prefix="burst",
    )


def _json(p: Platform, *args: str) -> list[Obj]:
    return list(json.loads(p.kubectl("get", *args, "-o", "json").stdout)["items"])


def free_devices(p: Platform) -> int:
    """Devices of the burst's device classes that no claim in the cluster holds, and that are on
    schedulable nodes (the reason tests cordon nodes for a while)."""
    cordoned = {n["metadata"]["name"] for n in _json(p, "nodes") if n.get("spec", {}).get("unschedulable")}
    taken: set[tuple[str, str, str]] = set()
    for c in _json(p, "resourceclaims", "-A"):
        for r in ((c.get("status") or {}).get("allocation") or {}).get("devices", {}).get("results") or []:
            taken.add((r["driver"], r["pool"], r["device"]))
    count = 0
    for s in _json(p, "resourceslices"):
        spec = s["spec"]
        if spec.get("nodeName") in cordoned:
            continue
        for d in spec.get("devices") or []:
            kind = d["attributes"].get("type", {}).get("string", "gpu")
            if (spec["driver"], spec["pool"]["name"], d["name"]) in taken:
                continue
            if kind in ("gpu", "mig"):
                count += 1
    return count


def apply_orders(p: Platform, ns: str, klass: str, names: list[str]) -> None:
    """One ``kubectl apply`` with every order, as a platform team applies a burst."""
    items = [
        {
            "apiVersion": "ai.deckhouse.io/v1alpha1",
            "kind": "InferenceService",
            "metadata": {"name": n, "namespace": ns},
            "spec": {"inferenceServiceClassName": klass, "model": hf(SMALL)},
        }
        for n in names
    ]
    p.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(items))


def orders(p: Platform, ns: str) -> dict[str, Obj]:
    return {o["metadata"]["name"]: o for o in _json(p, "inferenceservices", "-n", ns)}


def reason(o: Obj, type_: str) -> str | None:
    for c in (o.get("status") or {}).get("conditions") or []:
        if c["type"] == type_:
            return str(c["reason"])
    return None


def running_orders(p: Platform, ns: str) -> set[str]:
    out = set()
    for pod in _json(p, "pods", "-n", ns):
        if pod.get("status", {}).get("phase") == "Running" and not pod["metadata"].get("deletionTimestamp"):
            out.add(pod["metadata"]["labels"]["ai.deckhouse.io/inference-service"])
    return out


def allocated_claims(p: Platform, ns: str) -> int:
    return sum(1 for c in _json(p, "resourceclaims", "-n", ns) if (c.get("status") or {}).get("allocation"))


def assert_true_statuses(p: Platform, ns: str) -> None:
    """The status never contradicts the pods: an order whose pod runs is Ready, and Ready orders
    match allocated claims one to one."""
    got = orders(p, ns)
    running = running_orders(p, ns)
    ready = {n for n, o in got.items() if (o.get("status") or {}).get("phase") == "Ready"}
    lying = sorted(running - ready)
    assert not lying, f"orders whose pod runs but that are not Ready: {lying}"
    assert allocated_claims(p, ns) == len(ready)


def wait_all_ready(p: Platform, ns: str, names: list[str], timeout: float = 420) -> None:
    def not_ready() -> list[str]:
        got = orders(p, ns)
        return sorted(n for n in names if (got.get(n, {}).get("status") or {}).get("phase") != "Ready")

    wait_for(not_ready, lambda left: not left, timeout=timeout, message="every order of the burst Ready")


def test_a_burst_that_fills_the_fleet_is_all_ready_and_the_overflow_waits_then_gets_freed_places(
    platform: Platform, ns: str
) -> None:
    klass = burst_class(platform)
    n = free_devices(platform)
    assert n >= 8, f"the default fleet should have free devices, found {n}"
    names = [f"o{i:02d}" for i in range(n)]
    writes = controller_writes(platform)
    start = time.monotonic()
    apply_orders(platform, ns, klass, names)
    wait_all_ready(platform, ns, names)
    # Figures for the notes (printed, never asserted: speed lives in bench/).
    print(
        f"burst of {n}: all Ready {time.monotonic() - start:.0f}s after the apply; "
        f"{(controller_writes(platform) - writes) / n:.1f} controller writes per order"
    )
    assert_true_statuses(platform, ns)

    extra = [f"x{i}" for i in range(3)]
    apply_orders(platform, ns, klass, extra)
    for name in extra:
        platform.wait_reason(ns, name, "Planned", "NoCapacity", timeout=120)
    assert_true_statuses(platform, ns)

    platform.kubectl("delete", "inferenceservice", "-n", ns, "--wait=true", *names[:3])
    wait_all_ready(platform, ns, names[3:] + extra, timeout=300)
    assert_true_statuses(platform, ns)


def test_the_same_burst_with_the_controller_killed_twice_ends_the_same(platform: Platform, ns: str) -> None:
    klass = burst_class(platform)
    n = free_devices(platform)
    names = [f"k{i:02d}" for i in range(n)]
    apply_orders(platform, ns, klass, names)
    for _ in range(2):
        wait_for(
            lambda: sum(1 for o in orders(platform, ns).values() if o.get("status")),
            lambda seen: seen >= n // 3,
            timeout=120,
            message="the controller to be working on the burst",
        )
        platform.controller.kill()
        platform.controller.start()
    wait_all_ready(platform, ns, names)
    assert_true_statuses(platform, ns)
    auth = {s["metadata"]["name"] for s in _json(platform, "secrets", "-n", ns)}
    assert {f"{x}-auth" for x in names} <= auth
