"""What the order owns is deleted with it, including the endpoint's TLS Secret that cert-manager
creates (it holds a private key): the controller adopts it with an ownerReference."""

from __future__ import annotations

import time
from typing import Any

import pytest

from testkit.platform import Platform, hf
from tests.integration.conftest import wait_for

pytestmark = pytest.mark.cluster

SMALL = "Qwen/Qwen2.5-0.5B-Instruct"


def test_the_tls_secret_is_adopted_by_the_order_and_deleted_with_it(platform: Platform, ns: str) -> None:
    """The Secret is cert-manager's own (the platform runs it): it carries the labels of the
    Certificate's ``secretTemplate``, so the controller sees it and adopts it. Without them
    (controller/render/network.py before the fix) it was never adopted and outlived the order."""
    platform.create_order(ns, "owned", hf(SMALL))
    platform.wait_phase(ns, "owned", "Ready", timeout=120)
    order_uid = platform.order(ns, "owned")["metadata"]["uid"]

    def owners() -> list[str]:
        secret = platform.get("secret", "owned-tls", ns) or {}
        return [r["uid"] for r in secret.get("metadata", {}).get("ownerReferences") or []]

    wait_for(
        owners, lambda uids: order_uid in uids, timeout=60, message="the TLS Secret adopted by the order"
    )
    issued = platform.get("secret", "owned-tls", ns) or {}
    annotations = issued["metadata"].get("annotations") or {}
    assert annotations.get("cert-manager.io/issuer-name") == "inference-endpoints", annotations
    platform.kubectl("delete", "inferenceservice", "owned", "-n", ns, "--wait=true")
    wait_for(
        lambda: platform.get("secret", "owned-tls", ns),
        lambda s: s is None,
        timeout=60,
        message="the garbage collector to delete the adopted TLS Secret",
    )


def test_an_order_created_again_under_its_name_gets_a_token_of_its_own_and_keeps_it(
    platform: Platform, ns: str
) -> None:
    """The previous order's ``<order>-auth`` Secret can outlive it for as long as the garbage
    collector is away (here: kube-controller-manager stopped). The new order must not serve with
    that token, or its token would change under the user when the collector deletes the Secret."""
    from devtools.cluster import launcher

    def token_of(secret: dict[str, Any]) -> str:
        return str(secret["data"]["token"])

    def owner(secret: dict[str, Any]) -> str | None:
        refs = secret.get("metadata", {}).get("ownerReferences") or []
        return next((str(o["uid"]) for o in refs if o.get("controller")), None)

    platform.create_order(ns, "again", hf(SMALL))
    platform.wait_phase(ns, "again", "Ready", timeout=120)
    first = platform.get("secret", "again-auth", ns)
    assert first is not None
    launcher.stop_component("kube-controller-manager")  # the garbage collector with it
    try:
        platform.kubectl("delete", "inferenceservice", "again", "-n", ns)
        platform.create_order(ns, "again", hf(SMALL))
        uid = platform.order(ns, "again")["metadata"]["uid"]
        secret, _ = wait_for(
            lambda: (
                platform.get("secret", "again-auth", ns) or {},
                platform.order(ns, "again").get("status"),
            ),
            lambda seen: owner(seen[0]) == uid,
            timeout=60,
            message="the new order's own auth Secret in place of the previous order's (and the order's status)",
        )
        assert token_of(secret) != token_of(first)
    finally:
        launcher.restart_component("kube-controller-manager")
    platform.wait_phase(ns, "again", "Ready", timeout=180)
    time.sleep(10)  # the collector, back, has had its turn at the previous order's dependents
    after = platform.get("secret", "again-auth", ns)
    assert after is not None
    assert (after["metadata"]["uid"], token_of(after)) == (secret["metadata"]["uid"], token_of(secret))
