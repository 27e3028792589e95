"""deploy/webhook/webhooks.yaml registers exactly the app's routes, with the settings the issue asks for."""

from __future__ import annotations

import pathlib
from typing import Any

import pytest
import yaml

from shared.api.base import API_GROUP, API_VERSION
from webhook.handlers import ROUTES

ROOT = pathlib.Path(__file__).resolve().parents[3]
DOCS: list[dict[str, Any]] = [
    d for d in yaml.safe_load_all((ROOT / "deploy/webhook/webhooks.yaml").read_text()) if d
]
HOOKS = [(doc["kind"], hook) for doc in DOCS for hook in doc["webhooks"]]


def test_every_route_is_registered_once_with_its_kind_and_mutation() -> None:
    registered = {
        (hook["clientConfig"]["service"]["path"], hook["rules"][0]["resources"][0], kind)
        for kind, hook in HOOKS
    }
    expected = {
        (
            r.path,
            r.resource,
            "MutatingWebhookConfiguration" if r.mutating else "ValidatingWebhookConfiguration",
        )
        for r in ROUTES
    }
    assert registered == expected
    assert len(HOOKS) == len(ROUTES)


@pytest.mark.parametrize(("kind", "hook"), HOOKS, ids=[h["name"] for _, h in HOOKS])
def test_each_webhook_fails_closed_without_side_effects_within_five_seconds(
    kind: str, hook: dict[str, Any]
) -> None:
    assert hook["failurePolicy"] == "Fail"
    assert hook["sideEffects"] == "None"
    assert hook["timeoutSeconds"] == 5
    assert hook["admissionReviewVersions"] == ["v1"]
    assert hook["matchPolicy"] == "Equivalent"
    (rule,) = hook["rules"]
    assert rule["apiGroups"] == [API_GROUP]
    assert rule["apiVersions"] == [API_VERSION]
    assert rule["operations"] == ["CREATE", "UPDATE"]
    assert hook["clientConfig"]["service"] == {
        "name": "inference-webhook",
        "namespace": "d8-inference",
        "port": 443,
        "path": hook["clientConfig"]["service"]["path"],
    }


def test_both_configurations_get_the_ca_from_cert_manager() -> None:
    assert {d["kind"] for d in DOCS} == {"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"}
    for doc in DOCS:
        assert (
            doc["metadata"]["annotations"]["cert-manager.io/inject-ca-from"]
            == "d8-inference/inference-webhook"
        )
