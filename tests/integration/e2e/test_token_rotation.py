"""Rotating an order's token (issue 21, item 10): deleting ``<order>-auth`` mints a new token, and
the runtime's pods roll onto it. A pod keeps the environment it started with, so a pod that did not
roll would go on accepting the old token; here the real kube-controller-manager replaces them.

The runtime stand-in reads the token from the Secret, not from the pod, so it cannot show that the
old token is refused by a pod that did not roll; what this test asserts is the rollout itself, in
the real API server: the new digest on the template, a new ReplicaSet, no pod of the old one."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from shared import names
from testkit.platform import Platform, hf
from tests.integration.conftest import wait_for

pytestmark = pytest.mark.cluster

SMALL = "Qwen/Qwen2.5-0.5B-Instruct"
TOKEN_HASH = "ai.deckhouse.io/token-hash"


def _token(secret: dict[str, Any]) -> str:
    return base64.b64decode(secret["data"]["token"]).decode()


def _pods(platform: Platform, ns: str, order: str) -> list[dict[str, Any]]:
    """The order's pods that are not on their way out."""
    out = platform.kubectl("get", "pods", "-n", ns, "-l", f"{names.LABEL_ORDER}={order}", "-o", "json").stdout
    return [p for p in json.loads(out).get("items") or [] if not p["metadata"].get("deletionTimestamp")]


def test_deleting_the_auth_secret_rolls_the_pods_onto_a_new_token(platform: Platform, ns: str) -> None:
    platform.create_order(ns, "rot", hf(SMALL))
    platform.wait_phase(ns, "rot", "Ready", timeout=180)
    old = platform.get("secret", "rot-auth", ns)
    assert old is not None
    deployment = platform.get("deployment", "rot", ns)
    assert deployment is not None
    template = deployment["spec"]["template"]["metadata"]["annotations"]
    assert template[TOKEN_HASH] == names.short_hash(_token(old), 16)
    old_pods = {p["metadata"]["name"] for p in _pods(platform, ns, "rot")}
    assert old_pods

    platform.kubectl("delete", "secret", "rot-auth", "-n", ns)
    new, digest = wait_for(
        lambda: (
            platform.get("secret", "rot-auth", ns),
            ((platform.get("deployment", "rot", ns) or {}).get("spec") or {})
            .get("template", {})
            .get("metadata", {})
            .get("annotations", {})
            .get(TOKEN_HASH),
        ),
        lambda seen: (
            seen[0] is not None
            and seen[0]["metadata"]["uid"] != old["metadata"]["uid"]
            and seen[1] == names.short_hash(_token(seen[0]), 16)
        ),
        timeout=60,
        message="a new token minted and its digest on the Deployment's pod template",
    )
    assert new is not None and _token(new) != _token(old)
    wait_for(
        lambda: _pods(platform, ns, "rot"),
        lambda pods: (
            bool(pods)
            and all(p["metadata"]["name"] not in old_pods for p in pods)
            and all(p["metadata"].get("annotations", {}).get(TOKEN_HASH) == digest for p in pods)
        ),
        timeout=180,
        message="every pod of the order replaced by one started with the new token",
    )
    platform.wait_phase(ns, "rot", "Ready", timeout=180)
