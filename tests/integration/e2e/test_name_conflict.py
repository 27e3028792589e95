"""No takeover (issue 21, item 7; api.md section 6): an order whose name another object already holds
reads WorkloadReady=False/NameConflict, and the controller leaves that object exactly as it was.

The Service is made by hand, without the order's label, so the controller's caches never see it:
the controller finds it by name before it would apply, and writes nothing for the order.
"""

from __future__ import annotations

import pytest

from testkit.platform import Platform, hf
from tests.integration.conftest import wait_for

pytestmark = pytest.mark.cluster

SMALL = "Qwen/Qwen2.5-0.5B-Instruct"


def test_an_unowned_service_of_the_orders_name_is_a_name_conflict_and_stays_untouched(
    platform: Platform, ns: str
) -> None:
    platform.apply(
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "web", "namespace": ns, "labels": {"app": "tenant"}},
            "spec": {"selector": {"app": "tenant"}, "ports": [{"name": "http", "port": 80}]},
        }
    )
    before = platform.get("service", "web", ns)
    assert before is not None
    platform.create_order(ns, "web", hf(SMALL))
    order = platform.wait_reason(ns, "web", "WorkloadReady", "NameConflict", timeout=120)
    condition = platform.condition(order, "WorkloadReady")
    assert condition["status"] == "False"
    assert "Service `web`" in condition["message"], condition
    assert platform.condition(order, "Ready")["status"] == "False"
    assert order["status"]["phase"] == "Pending"

    after = platform.get("service", "web", ns)
    assert after is not None
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    assert not after["metadata"].get("ownerReferences")
    assert after["spec"]["selector"] == {"app": "tenant"}
    assert [p["port"] for p in after["spec"]["ports"]] == [80]
    # nothing else was written for the order either
    for kind in ("deployment", "horizontalpodautoscaler", "secret"):
        name = "web-auth" if kind == "secret" else "web"
        assert platform.get(kind, name, ns) is None, kind

    # the name freed, the order proceeds
    platform.kubectl("delete", "service", "web", "-n", ns)
    wait_for(
        lambda: platform.get("deployment", "web", ns),
        lambda d: d is not None,
        timeout=90,
        message="the order's Deployment once the name is free",
    )
    service = platform.get("service", "web", ns)
    assert service is not None
    assert [r["uid"] for r in service["metadata"]["ownerReferences"]] == [order["metadata"]["uid"]]
