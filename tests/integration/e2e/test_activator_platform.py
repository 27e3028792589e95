"""The e2e platform with the activator (``PLATFORM_ACTIVATOR``) and Prometheus (``PLATFORM_AUTOSCALING``):
the activator's addresses are where the controller reads them, and Prometheus scrapes its held gauge
with the order's own labels, the series an order's ScaledObject adds to its query.

The order at zero is written by hand (its Secrets, from the platform's CA issuer key, and the
controller-style ``<order>-activator`` EndpointSlice): no InferenceService, so the controller leaves it
alone. tests/integration/test_activator_plane.py proves the hold, the 401 and the forward.
"""

from __future__ import annotations

import concurrent.futures
import json

import httpx
import pytest

from devtools.wait import wait_for
from standins.runtime import make_server_pair
from testkit.platform import Platform
from tests.integration.test_activator_plane import (
    ORDER,
    TOKEN,
    Client,
    apply,
    endpoint_slice,
    write_order_secrets,
)

pytestmark = pytest.mark.cluster

PLATFORM_AUTOSCALING = True
PLATFORM_ACTIVATOR = True
PLATFORM_ACTIVATOR_MAX_HOLD_SECONDS = 20


def test_the_activator_is_listed_for_the_controller_and_its_held_gauge_scraped_with_the_orders_labels(
    platform: Platform, ns: str
) -> None:
    activator, scaling = platform.activator, platform.autoscaling
    assert activator is not None and scaling is not None and platform.activator_url == activator.url
    listed = json.loads(
        platform.kubectl("get", "endpointslices", "-n", "d8-inference", "-l",
                         "kubernetes.io/service-name=inference-activator", "-o", "json").stdout
    )["items"]  # fmt: skip
    (found,) = listed
    host, port = activator.address.rsplit(":", 1)
    assert [e["addresses"] for e in found["endpoints"] if e["conditions"]["ready"]] == [[host]]
    assert {p["name"]: p["port"] for p in found["ports"]}["https"] == int(port)
    wait_for(
        lambda: scaling.query('up{job="inference-activator"}'),
        lambda r: bool(r) and r[0]["value"][1] == "1",
        timeout=30,
        message="Prometheus scraping the activator",
    )

    order_host = f"{ORDER}.{ns}.svc"
    pair = make_server_pair(platform.ca_file.read_bytes(), platform.ca_key_pem, (order_host,))
    write_order_secrets(platform.api, ns, pair)
    apply(
        platform.kubectl,
        endpoint_slice(ns, f"{ORDER}-activator", "inference-controller.ai.deckhouse.io", host, int(port)),
    )
    client = Client(platform.runtime, platform.ca_file, order_host)

    def refused() -> int:
        try:
            return client.chat(None).status_code
        except httpx.HTTPError:  # the activator has not read the order's certificate yet
            return 0

    wait_for(refused, lambda status: status == 401, timeout=30, message="the activator answering 401")
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        call = pool.submit(client.chat, TOKEN)
        query = f'inference_activator_requests_held{{namespace="{ns}",order="{ORDER}"}}'
        series = wait_for(
            lambda: scaling.query(query),
            lambda r: bool(r) and r[0]["value"][1] == "1",
            timeout=PLATFORM_ACTIVATOR_MAX_HOLD_SECONDS - 2,
            message="the held gauge at 1 in Prometheus",
        )
        assert series[0]["metric"]["job"] == "inference-activator"
        assert call.result(timeout=PLATFORM_ACTIVATOR_MAX_HOLD_SECONDS + 10).status_code == 503
