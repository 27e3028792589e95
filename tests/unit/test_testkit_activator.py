"""The pure parts of testkit/activator.py: the objects standing for the activator's Service, and reading
one series of its /metrics."""

from __future__ import annotations

from testkit.activator import NAME, metric_value, service_and_slice

TEXT = """# HELP inference_activator_requests_held Requests ...
# TYPE inference_activator_requests_held gauge
inference_activator_requests_held{namespace="team",order="chat"} 1.0
inference_activator_requests_held{namespace="team",order="other"} 3.0
inference_activator_requests_refused_total{reason="unauthorized"} 2.0
"""


def test_one_series_is_read_by_its_labels() -> None:
    assert (
        metric_value(TEXT, "inference_activator_requests_held", {"namespace": "team", "order": "chat"}) == 1
    )
    assert metric_value(TEXT, "inference_activator_requests_held", {"order": "other"}) == 3
    assert metric_value(TEXT, "inference_activator_requests_held", {"order": "none"}) == 0
    assert metric_value(TEXT, "inference_activator_requests_refused_total", {"reason": "unauthorized"}) == 2


def test_the_slice_is_what_the_controller_reads_the_activator_s_addresses_from() -> None:
    service, endpoint_slice = service_and_slice("10.0.0.9:41000", 41001)
    assert service["metadata"] == {
        "name": NAME,
        "namespace": "d8-inference",
        "labels": {"app.kubernetes.io/name": NAME},
    }
    assert "selector" not in service["spec"]  # type: ignore[operator]
    meta = endpoint_slice["metadata"]
    assert isinstance(meta, dict)
    assert meta["labels"]["kubernetes.io/service-name"] == NAME
    assert meta["labels"]["endpointslice.kubernetes.io/managed-by"] != "endpointslice-controller.k8s.io"
    assert endpoint_slice["ports"] == [
        {"name": "https", "port": 41000, "protocol": "TCP"},
        {"name": "metrics", "port": 41001, "protocol": "TCP"},
    ]
    endpoints = endpoint_slice["endpoints"]
    assert isinstance(endpoints, list) and len(endpoints) == 1
    assert endpoints[0]["addresses"] == ["10.0.0.9"] and endpoints[0]["conditions"]["ready"] is True
