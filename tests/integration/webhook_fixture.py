"""The webhook's registration with the real API server, for end-to-end tests of the controller.

``cluster_webhook`` (session fixture): the webhook (devtools/product/webhook.py) started and registered
cluster-wide under the configuration name ``inference-webhook-e2e`` (deploy/webhook/webhooks.yaml with a
url client config; not ``inference-webhook``, which the demo registers). Import it from a conftest::

    from tests.integration.webhook_fixture import cluster_webhook  # noqa: F401
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client as k8s

from devtools.product.webhook import WebhookProcess, new_pki
from standins import local_webhook

E2E_NAME = "inference-webhook-e2e"


@pytest.fixture(scope="session")
def cluster_webhook(
    api: k8s.ApiClient, crds: None, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[WebhookProcess]:
    """The webhook running locally and registered for every namespace and every class and recipe."""
    process = WebhookProcess(new_pki(tmp_path_factory.mktemp("webhook-pki"))).start()
    configs: list[dict[str, Any]] = local_webhook.configurations(
        base_url=process.url, ca_bundle=process.pki.ca_bundle(), name=E2E_NAME
    )
    try:
        local_webhook.register(api, configs)
        yield process
    finally:
        local_webhook.unregister(api, E2E_NAME)
        process.stop()
