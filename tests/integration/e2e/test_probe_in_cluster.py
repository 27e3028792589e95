"""Issue 21 item 5: an External order is probed by its Service's in-cluster name, never through the
shared ingress. The controller runs with the documented ``probeAddressOverride`` (the runtime
stand-in), which changes only the address: the stand-in records the SNI and ``Host`` each request
carried, and every probe of the order named ``<order>.<ns>.svc``, not the external host."""

from __future__ import annotations

import pytest

from testkit.platform import Platform, hf

pytestmark = pytest.mark.cluster


def test_an_external_order_is_probed_by_its_in_cluster_name(platform: Platform, ns: str) -> None:
    p = platform
    klass = p.create_class({"exposure": {"type": "External", "authentication": "Token"}}, prefix="ext")
    p.create_order(ns, "pub", hf("Qwen/Qwen2.5-0.5B-Instruct"), klass=klass)
    obj = p.wait_phase(ns, "pub", "Ready", timeout=120)
    external = obj["status"]["endpoint"]["url"].removeprefix("https://")
    assert obj["status"]["endpoint"]["type"] == "External" and not external.endswith(".svc")
    in_cluster = f"pub.{ns}.svc"
    probes = [
        r for r in p.runtime.requests() if r["path"] == "/v1/models" and r["host"] in (in_cluster, external)
    ]
    assert probes, "the order was probed"
    assert {r["host"] for r in probes} == {in_cluster}, "no probe used the external host"
    assert in_cluster in p.condition(obj, "Ready")["message"]
