"""The local registration: deploy/webhook/webhooks.yaml pointed at https://127.0.0.1:<port> with our CA."""

from __future__ import annotations

import base64

from standins.local_webhook import configurations

CA = b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"


def hooks(**changes: object) -> list[tuple[str, dict[str, object]]]:
    confs = configurations(base_url="https://127.0.0.1:9443", ca_bundle=CA, **changes)  # type: ignore[arg-type]
    return [(conf["kind"], hook) for conf in confs for hook in conf["webhooks"]]


def test_every_webhook_points_at_the_local_url_with_the_ca() -> None:
    got = {hook["name"]: hook["clientConfig"] for _, hook in hooks()}
    assert got["mutate.inferenceservices.ai.deckhouse.io"] == {
        "url": "https://127.0.0.1:9443/mutate-inferenceservice",
        "caBundle": base64.b64encode(CA).decode(),
    }
    assert {c["url"] for c in got.values()} == {  # type: ignore[index]
        "https://127.0.0.1:9443/mutate-inferenceservice",
        "https://127.0.0.1:9443/validate-inferenceservice",
        "https://127.0.0.1:9443/validate-inferenceserviceclass",
        "https://127.0.0.1:9443/validate-inferencerecipe",
    }


def test_the_configurations_carry_the_given_name_and_no_cert_manager_annotation() -> None:
    confs = configurations(base_url="https://127.0.0.1:1", ca_bundle=CA, name="inference-webhook-test-1")
    assert [(c["kind"], c["metadata"]["name"]) for c in confs] == [
        ("MutatingWebhookConfiguration", "inference-webhook-test-1"),
        ("ValidatingWebhookConfiguration", "inference-webhook-test-1"),
    ]
    assert all("annotations" not in c["metadata"] for c in confs)


def test_a_test_scope_narrows_orders_by_namespace_and_cluster_objects_by_condition() -> None:
    selector = {"matchLabels": {"inference-webhook-test": "abc"}}
    condition = {"name": "this-test-only", "expression": "object.metadata.name.startsWith('wht-abc-')"}
    for _, hook in hooks(namespace_selector=selector, cluster_scoped_match_conditions=[condition]):
        namespaced = hook["rules"][0]["scope"] == "Namespaced"  # type: ignore[index]
        assert hook.get("namespaceSelector") == (selector if namespaced else None)
        assert hook.get("matchConditions") == (None if namespaced else [condition])
        assert hook["failurePolicy"] == "Fail"
