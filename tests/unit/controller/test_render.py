"""The workload manifests: named after the order, owned by it, carrying the plan."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

import pytest

from controller import render
from controller.config.settings import Settings
from shared import names, runtime_images
from tests.unit.controller.builders import make_class, make_order


@dataclass(frozen=True)
class Plan:
    device_class: str = "gpu.nvidia.com"
    device_selectors: list[str] = field(
        default_factory=lambda: ['device.attributes["gpu.nvidia.com"].productName == "NVIDIA L4"']
    )
    accelerator_count: int = 1
    capacity_requests: dict[str, str] | None = None
    sharing_mode: str = "Exclusive"
    share_percent: int = 100
    image: str = runtime_images.pinned().image
    args: list[str] = field(default_factory=lambda: ["--model", "/models/model", "--enable-ssl-refresh"])
    cpu: str = "4"
    memory: str = "32Gi"
    model_volume: str = "24Gi"
    node_count: int = 1

    @property
    def devices_per_pod(self) -> int:
        return self.accelerator_count // self.node_count

    def model_dump_json(self) -> str:
        return json.dumps(asdict(self))


SETTINGS = Settings(hf_endpoint="http://127.0.0.1:9999", model_storage_class="models")


def by_kind(objs: list[dict[str, object]]) -> dict[str, dict[str, object]]:
    return {str(o["kind"]): o for o in objs}


def test_every_object_is_named_after_the_order_and_owned_by_it() -> None:
    order = make_order()
    objs = render.workload(order, Plan(), make_class().spec, SETTINGS, revision="abc")
    for o in objs:
        meta = o["metadata"]
        assert meta["name"].startswith("support-llm"), meta["name"]
        assert meta["namespace"] == "support"
        (ref,) = meta["ownerReferences"]
        assert (ref["uid"], ref["controller"], ref["blockOwnerDeletion"]) == ("u-1", True, True)
    assert set(by_kind(objs)) == {
        "ResourceClaimTemplate",
        "PersistentVolumeClaim",
        "Certificate",
        "Service",
        "Deployment",
        "ScaledObject",
    }


def test_external_exposure_adds_an_ingress_with_the_templated_host() -> None:
    spec = make_class(spec={"exposure": {"type": "External", "authentication": "None"}}).spec
    objs = by_kind(render.workload(make_order(), Plan(), spec, SETTINGS, revision=None))
    ingress = objs["Ingress"]
    assert ingress["spec"]["rules"][0]["host"] == "support-llm.support.inference.example.com"  # type: ignore[index]
    endpoint = render.endpoint_for(make_order(), spec, SETTINGS)
    assert (endpoint.url, endpoint.type) == ("https://support-llm.support.inference.example.com", "External")


def test_the_fetcher_gets_hf_token_from_the_users_secret_by_reference_only() -> None:
    order = make_order(spec={"model": {"authSecretRef": {"name": "hf-token"}}})
    dep = by_kind(render.workload(order, Plan(), make_class().spec, SETTINGS, revision="abc"))["Deployment"]
    init: list[dict[str, Any]] = dep["spec"]["template"]["spec"]["initContainers"]  # type: ignore[index]
    fetcher = next(c for c in init if c["name"] == names.FETCHER_CONTAINER)
    env = {e["name"]: e for e in fetcher["env"]}
    assert env["HF_TOKEN"]["valueFrom"]["secretKeyRef"] == {"name": "hf-token", "key": "token"}
    assert env["HF_ENDPOINT"]["value"] == "http://127.0.0.1:9999"
    assert "--revision" in fetcher["args"] and "abc" in fetcher["args"]


def test_the_runtime_gets_the_plan_args_the_priority_class_the_claim_and_the_api_key() -> None:
    dep = by_kind(render.workload(make_order(), Plan(), make_class().spec, SETTINGS, revision=None))[
        "Deployment"
    ]
    pod = dep["spec"]["template"]["spec"]  # type: ignore[index]
    (runtime,) = pod["containers"]
    # the plan's args, then the token guard of an order with a token (test_token_guard)
    assert runtime["args"] == [*Plan().args, "--middleware", "inference_token_guard.TokenGuard"]
    assert pod["priorityClassName"] == "inference-default"
    assert runtime["resources"]["claims"] == [{"name": names.CLAIM_NAME}]
    assert runtime["env"][0]["name"] == "VLLM_API_KEY"
    assert runtime["env"][0]["valueFrom"]["secretKeyRef"] == {"name": "support-llm-auth", "key": "token"}
    assert not any("support-llm-auth" in a or "api-key" in a for a in runtime["args"])
    assert "replicas" not in dep["spec"], "replicas belong to the HPA"  # type: ignore[operator]


def test_a_class_without_auth_passes_no_api_key() -> None:
    spec = make_class(spec={"exposure": {"authentication": "None"}}).spec
    dep = by_kind(render.workload(make_order(), Plan(), spec, SETTINGS, revision=None))["Deployment"]
    env = dep["spec"]["template"]["spec"]["containers"][0]["env"]  # type: ignore[index]
    assert "VLLM_API_KEY" not in {e["name"] for e in env}


def test_the_claim_template_requests_the_planned_devices_and_changes_name_with_them() -> None:
    order = make_order()
    one = render.resource_claim_template(order, Plan())
    two = render.resource_claim_template(
        order, Plan(accelerator_count=2, capacity_requests={"memory": "12Gi"})
    )
    exactly = two["spec"]["spec"]["devices"]["requests"][0]["exactly"]
    assert exactly["count"] == 2 and exactly["capacity"] == {"requests": {"memory": "12Gi"}}
    assert one["metadata"]["name"] != two["metadata"]["name"]


@pytest.mark.parametrize(
    ("scaling", "policy"),
    [
        pytest.param(None, ("QueueDepth", 2, 300), id="no scaling block: queue depth 2, 300 s"),
        pytest.param({"minReplicas": 2}, ("QueueDepth", 2, 300), id="bounds only"),
        pytest.param({"metric": "KVCacheUtilization"}, ("KVCacheUtilization", 80, 300), id="KV default 80"),
        pytest.param({"metric": "RunningRequests"}, ("RunningRequests", 8, 300), id="running default 8"),
        pytest.param({"metric": "QueueDepth"}, ("QueueDepth", 2, 300), id="queue depth default 2"),
        pytest.param(
            {"metric": "RunningRequests", "target": 3, "scaleDownStabilizationSeconds": 60},
            ("RunningRequests", 3, 60),
            id="explicit values win",
        ),
        pytest.param({"scaleDownStabilizationSeconds": 0}, ("QueueDepth", 2, 0), id="a window of 0 is kept"),
        pytest.param({"target": 150}, ("QueueDepth", 150, 300), id="queue depth is not capped at 100"),
        pytest.param(
            {"metric": "KVCacheUtilization", "target": 150}, ("KVCacheUtilization", 100, 300), id="KV capped"
        ),
    ],
)
def test_the_scaling_policy_fills_in_the_defaults(
    scaling: dict[str, Any] | None, policy: tuple[str, int, int]
) -> None:
    spec = make_class(spec={"scaling": scaling}).spec
    got = render.scaling_policy(spec)
    assert (got.metric, got.target, got.scale_down_stabilization_seconds) == policy


def test_the_scaled_object_follows_the_queue_depth_within_the_class_bounds_by_default() -> None:
    """The whole object for the default policy: KEDA (keda.sh/v1alpha1) grows the Deployment on the
    runtime's waiting requests, never on CPU, and names its HPA itself (no horizontalPodAutoscalerConfig.name)."""
    order = make_order()
    spec = make_class(spec={"scaling": {"minReplicas": 2, "maxReplicas": 3}}).spec
    settings = Settings(prometheus_server_address="http://prom.example:9090")
    so = render.autoscaler(order, spec, settings)
    assert so["metadata"] == {
        "name": "support-llm",
        "namespace": "support",
        "labels": render.labels(order),
        "ownerReferences": [render.owner_reference(order)],
    }
    assert (so["apiVersion"], so["kind"]) == ("keda.sh/v1alpha1", "ScaledObject")
    assert so["spec"] == {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "support-llm"},
        "minReplicaCount": 2,
        "maxReplicaCount": 3,
        "pollingInterval": 5,
        "advanced": {
            "horizontalPodAutoscalerConfig": {
                "behavior": {
                    "scaleDown": {
                        "stabilizationWindowSeconds": 300,
                        "policies": [{"type": "Pods", "value": 1, "periodSeconds": 60}],
                    },
                    "scaleUp": {
                        "stabilizationWindowSeconds": 30,
                        "policies": [{"type": "Pods", "value": 2, "periodSeconds": 120}],
                    },
                }
            }
        },
        "triggers": [
            {
                "type": "prometheus",
                "metricType": "AverageValue",
                "metadata": {
                    "serverAddress": "http://prom.example:9090",
                    "query": 'sum(avg_over_time(vllm:num_requests_waiting{namespace="support",order="support-llm"}[1m]))',
                    "threshold": "2",
                },
            }
        ],
    }
    assert "name" not in so["spec"]["advanced"]["horizontalPodAutoscalerConfig"]


@pytest.mark.parametrize(
    ("scaling", "query", "metric_type", "threshold", "window"),
    [
        pytest.param(
            {"metric": "KVCacheUtilization", "scaleDownStabilizationSeconds": 600},
            '100 * avg(avg_over_time(vllm:kv_cache_usage_perc{namespace="support",order="support-llm"}[1m]))',
            "Value",
            "80",
            600,
            id="KV cache: a mean percent, metricType Value",
        ),
        pytest.param(
            {"metric": "RunningRequests", "target": 5, "scaleDownStabilizationSeconds": 0},
            'sum(avg_over_time(vllm:num_requests_running{namespace="support",order="support-llm"}[1m]))',
            "AverageValue",
            "5",
            0,
            id="running requests: a sum, metricType AverageValue",
        ),
        pytest.param(
            {"metric": "QueueDepth", "target": 7},
            'sum(avg_over_time(vllm:num_requests_waiting{namespace="support",order="support-llm"}[1m]))',
            "AverageValue",
            "7",
            300,
            id="queue depth with its own target",
        ),
    ],
)
def test_the_scaled_object_follows_the_class_metric_target_and_window(
    scaling: dict[str, Any], query: str, metric_type: str, threshold: str, window: int
) -> None:
    so = render.autoscaler(make_order(), make_class(spec={"scaling": scaling}).spec, SETTINGS)
    (trigger,) = so["spec"]["triggers"]
    assert (trigger["metadata"]["query"], trigger["metricType"], trigger["metadata"]["threshold"]) == (
        query,
        metric_type,
        threshold,
    )
    assert trigger["metadata"]["serverAddress"] == "http://prometheus.d8-monitoring.svc:9090"
    behavior = so["spec"]["advanced"]["horizontalPodAutoscalerConfig"]["behavior"]
    assert behavior["scaleDown"]["stabilizationWindowSeconds"] == window


@pytest.mark.parametrize(
    ("namespace", "name"),
    [
        ('a"b', "web"),
        ("ns", 'web",order=~".*'),
        ("ns", "Web"),
        ("ns", "web\\"),
        ("", "web"),
        ("ns", "-web"),
        ("ns", "web-"),
        ("ns", "a" * 64),
        ("ns", "web\n"),
        ("ns\n", "web"),
    ],
)
def test_the_query_refuses_a_namespace_or_name_that_is_not_a_dns_label(namespace: str, name: str) -> None:
    with pytest.raises(ValueError, match="not a DNS label"):
        render.prometheus_query("QueueDepth", namespace, name)


def test_the_query_accepts_the_longest_dns_label_and_digits() -> None:
    name = "a" + "0" * 61 + "z"
    query, _ = render.prometheus_query("RunningRequests", "9ns", name)
    assert query == f'sum(avg_over_time(vllm:num_requests_running{{namespace="9ns",order="{name}"}}[1m]))'


def test_the_issued_tls_secret_carries_the_label_the_controllers_secret_informer_selects() -> None:
    """cert-manager copies ``secretTemplate.labels`` onto ``<order>-tls``; the controller's Secret
    informer lists only Secrets with the order label, and maps each to the order it names. Without
    the template the issued Secret is never seen, so never adopted (found by the e2e run on the real
    cert-manager). Mutant: no ``secretTemplate`` (or one without the order label)."""
    from controller.kinds import KINDS

    order = make_order()
    crt = by_kind(render.workload(order, Plan(), make_class().spec, SETTINGS, revision=None))["Certificate"]
    spec = crt["spec"]
    assert isinstance(spec, dict)
    issued = {"metadata": {"name": spec["secretName"], "labels": spec["secretTemplate"]["labels"]}}
    (secrets,) = [k for k in KINDS if k.kind == "Secret"]
    assert secrets.label_selector == names.LABEL_ORDER  # an existence selector on the order label
    assert secrets.label_selector in issued["metadata"]["labels"]
    assert names.order_of(issued) == order.metadata.name
