"""Issue 21 item 5: an External order is probed by its Service's in-cluster name, never through the
shared ingress (whose same-host rules in another namespace would receive the Bearer token)."""

from __future__ import annotations

from controller import render
from controller.config.settings import Settings
from controller.decide import decide
from controller.planning import plan_decision
from controller.snapshot import ProbeState
from shared.api.inference_class import InferenceServiceClass
from tests.unit.controller.builders import make_order
from tests.unit.controller.snapshots import (
    GPU,
    klass,
    plan_on,
    resolved_for,
    run_planner,
    serving,
    status,
)

IN_CLUSTER = "https://support-llm.support.svc"


def external_class() -> InferenceServiceClass:
    return klass(spec={"placement": {"deviceClassNames": [GPU]}, "exposure": {"type": "External"}})


def test_an_external_order_is_probed_by_its_in_cluster_name_not_its_external_host() -> None:
    plan = plan_on(GPU)
    s = serving(plan, prior=status(resolved=resolved_for(plan)), probe=ProbeState(), klass=external_class())
    intents = decide(s, run_planner(s, plan_decision(s)))
    endpoint = intents.fields.endpoint
    assert endpoint is not None and endpoint.type == "External"
    assert endpoint.url != IN_CLUSTER  # the user's URL is the external host ...
    assert intents.probe is not None and intents.probe.url == IN_CLUSTER  # ... the probe's is not
    assert intents.probe.token is not None


def test_the_probe_url_is_the_service_name_the_certificate_carries() -> None:
    order = make_order()
    url = render.probe_url(order)
    assert url == IN_CLUSTER
    spec = external_class().spec
    cert = render.certificate(order, render.endpoint_for(order, spec, Settings()), Settings())
    assert url.removeprefix("https://") in cert["spec"]["dnsNames"]
