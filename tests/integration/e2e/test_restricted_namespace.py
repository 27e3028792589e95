"""An order reaches Ready in a namespace that enforces Pod Security ``restricted``.

The ReplicaSet controller creates the runtime pod through admission, so a pod that broke the
``restricted`` profile would never exist and the order would never be Ready. The stand-in also
checks the pod's runtime args against the flags the pinned vLLM accepts.
"""

from __future__ import annotations

import json

import pytest

from testkit.platform import Platform, hf

pytestmark = pytest.mark.cluster

MODEL = "Qwen/Qwen2.5-7B-Instruct"


def test_an_order_in_a_namespace_enforcing_restricted_reaches_ready(platform: Platform, ns: str) -> None:
    platform.kubectl(
        "label", "namespace", ns,
        "pod-security.kubernetes.io/enforce=restricted", "pod-security.kubernetes.io/enforce-version=latest",
    )  # fmt: skip
    platform.create_order(ns, "chat", hf(MODEL))
    platform.wait_phase(ns, "chat", "Ready", timeout=120)
    pods = json.loads(platform.kubectl("get", "pods", "-n", ns, "-o", "json").stdout)["items"]
    assert pods, "the runtime pod was admitted"
    spec = pods[0]["spec"]
    assert spec["securityContext"]["runAsNonRoot"] is True
    runtime = next(c for c in spec["containers"] if c["name"] == "runtime")
    assert {e["name"] for e in runtime["env"]} >= {"VLLM_API_KEY"}
    assert "--enable-ssl-refresh" in runtime["args"]
    assert not any("api-key" in a for a in runtime["args"])
