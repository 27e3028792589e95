"""Controller-driven preemption end to end: kube-scheduler v1.37.2 does not preempt a pod to free a
DRA device (tests/integration/test_dra_preemption.py), so the controller evicts the replica of a
lower-priority order whose GPU a higher-priority order's plan needs (docs/admin-guide.md, "Priority
and preemption"). Both classes are pinned to one free L4: every L4 the class may use is held."""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

import pytest

from shared import names
from testkit.platform import Platform, hf
from tests.integration.conftest import wait_for
from tests.integration.e2e.test_reasons import SMALL, free_l4_uuid, free_l4_uuids

pytestmark = pytest.mark.cluster
# KEDA makes the HPA that holds a Deployment at the class's minReplicas (the controller leaves
# replicas to it): test_a_serving_order_scaling_up_preempts_... needs its order's second replica.
PLATFORM_AUTOSCALING = True


def _priority_class(p: Platform, value: int) -> str:
    name = f"e2e-prio-{value}-{uuid.uuid4().hex[:5]}"
    p.apply(
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": name},
            "value": value,
            "preemptionPolicy": "PreemptLowerPriority",
        }
    )
    return name


def _pinned_class(p: Platform, uid: str, priority_class: str, *, replicas: int = 1, also: str = "") -> str:
    """A class pinned to the L4 ``uid`` (and ``also`` when given), of ``replicas`` replicas."""
    uids = ", ".join(f'"{u}"' for u in (uid, also) if u)
    return p.create_class(
        {
            "placement": {
                "deviceClassNames": ["gpu.nvidia.com"],
                "selector": f'device.attributes["gpu.nvidia.com"].uuid in [{uids}]',
            },
            "scaling": {
                "minReplicas": replicas,
                "maxReplicas": replicas,
                "priorityClassName": priority_class,
            },
        }
    )


def _claims(p: Platform, ns: str, order: str) -> list[dict[str, Any]]:
    out = json.loads(p.kubectl("get", "resourceclaims", "-n", ns, "-o", "json").stdout)["items"]
    return [c for c in out if (c["metadata"].get("labels") or {}).get(names.LABEL_ORDER) == order]


def _held_uuids(p: Platform, ns: str, order: str) -> set[str]:
    slices = json.loads(p.kubectl("get", "resourceslices", "-o", "json").stdout)["items"]
    uuids = {
        (s["spec"]["pool"]["name"], d["name"]): d["attributes"]["uuid"]["string"]
        for s in slices
        for d in s["spec"]["devices"]
    }
    return {
        uuids[(r["pool"], r["device"])]
        for c in _claims(p, ns, order)
        for r in (((c.get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results") or []
    }


def _events(p: Platform, ns: str, order: str) -> list[dict[str, Any]]:
    out = json.loads(p.kubectl("get", "events.events.k8s.io", "-n", ns, "-o", "json").stdout)["items"]
    return [e for e in out if (e.get("regarding") or {}).get("name") == order]


def _delete(p: Platform, kind: str, name: str) -> None:
    p.kubectl("delete", kind, name, "--ignore-not-found", "--wait=false")


def test_a_high_priority_order_preempts_the_low_priority_order_on_the_only_l4(
    platform: Platform, ns: str
) -> None:
    low_pc, high_pc = _priority_class(platform, 100), _priority_class(platform, 2000)
    try:
        uid = free_l4_uuid(platform)
        low, high = _pinned_class(platform, uid, low_pc), _pinned_class(platform, uid, high_pc)
        t0 = time.monotonic()
        platform.create_order(ns, "low", hf(SMALL), klass=low)
        platform.wait_phase(ns, "low", "Ready", timeout=120)
        t_low = time.monotonic() - t0
        assert _held_uuids(platform, ns, "low") == {uid}

        t1 = time.monotonic()
        platform.create_order(ns, "high", hf(SMALL), klass=high)
        platform.wait_phase(ns, "high", "Ready", timeout=180)
        t_high = time.monotonic() - t1
        assert _held_uuids(platform, ns, "high") == {uid}

        obj = wait_for(
            lambda: platform.order(ns, "low"),
            lambda o: (
                o["status"].get("phase") == "Pending"
                and platform.condition(o, "WorkloadReady").get("status") == "False"
            ),
            timeout=120,
        )
        t_low_out = time.monotonic() - t1
        assert obj["status"]["phase"] == "Pending"
        assert _held_uuids(platform, ns, "low") == set()
        low_events = wait_for(
            lambda: _events(platform, ns, "low"),
            lambda es: any(e.get("reason") == "Preempted" for e in es),
            timeout=60,
        )
        preempted = [e for e in low_events if e.get("reason") == "Preempted"]
        assert preempted[0]["type"] == "Warning"
        assert f"{ns}/high" in preempted[0]["note"] and "priority 2000" in preempted[0]["note"]
        high_events = [e for e in _events(platform, ns, "high") if e.get("reason") == "Preempting"]
        assert high_events and f"{ns}/low" in high_events[0]["note"]
        wready = platform.condition(obj, "WorkloadReady")
        print(
            f"\nlow Ready after {t_low:.1f}s; high Ready {t_high:.1f}s after its creation; low Pending "
            f"{t_low_out:.1f}s after; low WorkloadReady: {wready.get('reason')}: {wready.get('message')}"
        )
    finally:
        _delete(platform, "priorityclass", low_pc)
        _delete(platform, "priorityclass", high_pc)


def test_an_order_of_equal_priority_waits_and_evicts_nothing(platform: Platform, ns: str) -> None:
    pc = _priority_class(platform, 100)
    try:
        uid = free_l4_uuid(platform)
        klass = _pinned_class(platform, uid, pc)
        platform.create_order(ns, "first", hf(SMALL), klass=klass)
        platform.wait_phase(ns, "first", "Ready", timeout=120)
        pods = platform.kubectl(
            "get", "pods", "-n", ns, "-l", f"{names.LABEL_ORDER}=first", "-o", "name"
        ).stdout.split()
        platform.create_order(ns, "second", hf(SMALL), klass=klass)
        obj = platform.wait_reason(ns, "second", "Planned", "NoCapacity")
        assert obj["status"]["phase"] == "Pending"
        time.sleep(10)
        assert platform.order(ns, "first")["status"]["phase"] == "Ready"
        assert (
            platform.kubectl(
                "get", "pods", "-n", ns, "-l", f"{names.LABEL_ORDER}=first", "-o", "name"
            ).stdout.split()
            == pods
        )
        assert not [e for e in _events(platform, ns, "first") if e.get("reason") == "Preempted"]
    finally:
        _delete(platform, "priorityclass", pc)


def test_a_serving_order_scaling_up_preempts_the_low_priority_replica_on_the_l4_it_needs(
    platform: Platform, ns: str
) -> None:
    """Scale-up preemption: the high order's class may use two L4s and wants two replicas; its new
    plan takes the free one (preempting nothing), and its second replica, refused by the scheduler
    for the L4 the low order holds, is placed by evicting that replica. It never reads
    ScaleUpBlocked meanwhile (preemption can place the replica)."""
    low_pc, high_pc = _priority_class(platform, 100), _priority_class(platform, 2000)
    try:
        free, held = free_l4_uuids(platform, 2)
        low = _pinned_class(platform, held, low_pc)
        high = _pinned_class(platform, free, high_pc, replicas=2, also=held)
        platform.create_order(ns, "low", hf(SMALL), klass=low)
        platform.wait_phase(ns, "low", "Ready", timeout=120)
        assert _held_uuids(platform, ns, "low") == {held}

        t0 = time.monotonic()
        platform.create_order(ns, "high", hf(SMALL), klass=high)
        seen: list[tuple[str, str, str]] = []

        def look() -> dict[str, Any]:
            o = platform.order(ns, "high")
            c = platform.condition(o, "ScalingHealthy")
            if c and (not seen or seen[-1][:2] != (c.get("status"), c.get("reason"))):
                seen.append((c.get("status", ""), c.get("reason", ""), c.get("message", "")))
            return o

        wait_for(
            look,
            lambda o: (
                o["status"].get("phase") == "Ready"
                and ((platform.get("deployment", "high", ns) or {}).get("status") or {}).get(
                    "availableReplicas"
                )
                == 2
            ),
            timeout=180,
            interval=0.5,
        )
        t_two = time.monotonic() - t0
        assert _held_uuids(platform, ns, "high") == {free, held}
        assert not [s for s in seen if s[1] == "ScaleUpBlocked"], seen
        obj = wait_for(
            lambda: platform.order(ns, "low"),
            lambda o: o["status"].get("phase") != "Ready",
            timeout=60,
        )
        assert _held_uuids(platform, ns, "low") == set()
        low_events = wait_for(
            lambda: _events(platform, ns, "low"),
            lambda es: any(e.get("reason") == "Preempted" for e in es),
            timeout=60,
        )
        note = next(e for e in low_events if e.get("reason") == "Preempted")["note"]
        assert f"{ns}/high" in note and "priority 2000" in note and "scale-up" in note
        assert [e for e in _events(platform, ns, "high") if e.get("reason") == "Preempting"]
        print(
            f"\nhigh: 2 replicas available {t_two:.1f}s after its creation; its ScalingHealthy: {seen}; "
            f"low phase {obj['status'].get('phase')}"
        )
    finally:
        _delete(platform, "priorityclass", low_pc)
        _delete(platform, "priorityclass", high_pc)
