"""What the order owns is deleted with it, including the endpoint's TLS Secret that cert-manager
creates (it holds a private key): the controller adopts it with an ownerReference."""

from __future__ import annotations

import pytest

from tests.integration.conftest import wait_for
from tests.integration.platform import Platform, hf

pytestmark = pytest.mark.cluster

SMALL = "Qwen/Qwen2.5-0.5B-Instruct"


def test_the_tls_secret_is_adopted_by_the_order_and_deleted_with_it(platform: Platform, ns: str) -> None:
    platform.create_order(ns, "owned", hf(SMALL))
    platform.wait_phase(ns, "owned", "Ready", timeout=120)
    order_uid = platform.order(ns, "owned")["metadata"]["uid"]
    # What cert-manager writes for the order's Certificate: the Secret, with the labels of the
    # Certificate's secretTemplate (cert-manager runs in the cert-manager tests, not here).
    platform.apply(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {
                "name": "owned-tls",
                "namespace": ns,
                "labels": {"ai.deckhouse.io/inference-service": "owned"},
            },
            "type": "kubernetes.io/tls",
            "stringData": {"tls.crt": "cert", "tls.key": "key"},
        }
    )

    def owners() -> list[str]:
        secret = platform.get("secret", "owned-tls", ns) or {}
        return [r["uid"] for r in secret.get("metadata", {}).get("ownerReferences") or []]

    wait_for(
        owners, lambda uids: order_uid in uids, timeout=60, message="the TLS Secret adopted by the order"
    )
    platform.kubectl("delete", "inferenceservice", "owned", "-n", ns, "--wait=true")
    wait_for(
        lambda: platform.get("secret", "owned-tls", ns),
        lambda s: s is None,
        timeout=60,
        message="the garbage collector to delete the adopted TLS Secret",
    )
