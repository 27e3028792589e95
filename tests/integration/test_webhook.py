"""The webhook through the REAL API server: the API server calls our process over TLS.

Each test starts its own webhook process and registers it under its own configuration name,
narrowed to this test's namespace (namespaceSelector) and to class and recipe names with this
test's prefix (matchConditions), so tests running at the same time in the cluster are not affected.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import pathlib
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from kubernetes import client as k8s

from devtools.local_pki import issue_serving_certificate
from devtools.product.webhook import WebhookProcess, new_pki
from shared import runtime_images
from standins import local_webhook
from testkit.webhook import make_order, make_review
from tests.integration import webhook_fixture

pytestmark = pytest.mark.cluster
cluster_webhook = webhook_fixture.cluster_webhook  # the reusable fixture, tested by the last test here

Kubectl = Callable[..., Any]
WaitFor = Callable[..., Any]

ORDER = """apiVersion: ai.deckhouse.io/v1alpha1
kind: InferenceService
metadata:
  name: {name}
  namespace: {namespace}
spec:
  inferenceServiceClassName: default-llm
  model:
{model}
"""
GOOD_MODEL = "    src: HuggingFace\n    ref: {name: Qwen/Qwen2.5-7B-Instruct, revision: main}"
# Passes the CRD schema (pattern and CEL rules), so only the webhook can refuse it.
WEBHOOK_ONLY_BAD_MODEL = (
    "    src: HuggingFace\n    ref: {name: Qwen/Qwen2.5--Instruct, revision: release..1}\n"
    "    authSecretRef: {name: HF_Token}"
)


def order_yaml(name: str, namespace: str, model: str = GOOD_MODEL) -> str:
    return ORDER.format(name=name, namespace=namespace, model=model)


@dataclass
class Scoped:
    tag: str
    namespace: str
    name: str
    process: WebhookProcess

    @property
    def prefix(self) -> str:
        return f"wht-{self.tag}-"


def stored(kubectl: Kubectl, kind: str, name: str, namespace: str | None = None) -> str:
    args = ["get", kind, name, "--ignore-not-found", "-o", "name"]
    if namespace:
        args += ["-n", namespace]
    return str(kubectl(*args).stdout.strip())


@pytest.fixture
def scoped(
    api: k8s.ApiClient,
    crds: None,
    namespace: str,
    kubectl: Kubectl,
    wait_for: WaitFor,
    tmp_path: pathlib.Path,
) -> Iterator[Scoped]:
    tag = uuid.uuid4().hex[:6]
    kubectl("label", "namespace", namespace, f"inference-webhook-test={tag}")
    # Idle connections close after 1 s, so the API server handshakes again soon after a rotation.
    process = WebhookProcess(new_pki(tmp_path), reload_check_seconds=0, keep_alive_seconds=1).start()
    name = f"inference-webhook-test-{tag}"
    configs = local_webhook.configurations(
        base_url=process.url,
        ca_bundle=process.pki.ca_bundle(),
        name=name,
        namespace_selector={"matchLabels": {"inference-webhook-test": tag}},
        cluster_scoped_match_conditions=[
            {"name": "this-test-only", "expression": f"object.metadata.name.startsWith('wht-{tag}-')"}
        ],
    )
    local_webhook.register(api, configs)
    scope = Scoped(tag=tag, namespace=namespace, name=name, process=process)
    try:
        # The API server picks up a new configuration within moments: wait until the webhook answers.
        wait_for(
            lambda: (
                kubectl(
                    "create",
                    "--dry-run=server",
                    "-f",
                    "-",
                    input=order_yaml("probe", namespace, WEBHOOK_ONLY_BAD_MODEL),
                    check=False,
                ).stderr
            ),
            lambda err: "denied the request" in err,
            message="the API server to call the registered webhook",
        )
        yield scope
    finally:
        local_webhook.unregister(api, name)
        process.stop()


def test_a_bad_order_created_with_kubectl_is_refused_with_the_webhooks_message(
    scoped: Scoped, kubectl: Kubectl
) -> None:
    result = kubectl(
        "create", "-f", "-", input=order_yaml("bad", scoped.namespace, WEBHOOK_ONLY_BAD_MODEL), check=False
    )
    assert result.returncode != 0
    assert (
        'admission webhook "validate.inferenceservices.ai.deckhouse.io" denied the request' in result.stderr
    )
    for message in (
        "`spec.model.ref.name`: must not contain `--` or `..` (the Hub refuses such repository ids), "
        'not "Qwen/Qwen2.5--Instruct"',
        "`spec.model.ref.revision`: must be a branch, tag or commit name git accepts",
        "`spec.model.authSecretRef.name`: must be the name of a Secret in the order's namespace",
    ):
        assert message in result.stderr
    assert stored(kubectl, "inferenceservice", "bad", scoped.namespace) == "", "nothing may be stored"


@pytest.mark.parametrize("name", ["llama3.1", "8b-chat"])
def test_an_order_name_the_crd_accepts_but_a_service_cannot_take_is_refused_at_create(
    scoped: Scoped, kubectl: Kubectl, name: str
) -> None:
    result = kubectl("create", "-f", "-", input=order_yaml(name, scoped.namespace), check=False)
    assert result.returncode != 0
    assert (
        'admission webhook "validate.inferenceservices.ai.deckhouse.io" denied the request' in result.stderr
    )
    assert "`metadata.name`: must be a DNS-1035 label" in result.stderr
    assert f'not "{name}"' in result.stderr
    assert stored(kubectl, "inferenceservice", name, scoped.namespace) == "", "nothing may be stored"


def test_a_good_order_is_admitted_by_both_webhooks(scoped: Scoped, kubectl: Kubectl) -> None:
    before = scoped.process.metric(
        "inference_webhook_decisions_total", path="/mutate-inferenceservice", outcome="allowed"
    )
    kubectl("create", "-f", "-", input=order_yaml("good", scoped.namespace))
    assert (
        stored(kubectl, "inferenceservice", "good", scoped.namespace)
        == "inferenceservice.ai.deckhouse.io/good"
    )
    after = scoped.process.metric(
        "inference_webhook_decisions_total", path="/mutate-inferenceservice", outcome="allowed"
    )
    assert after == before + 1, "the API server called the mutating webhook for the order"
    # Model and class may change on UPDATE.
    kubectl(
        "patch",
        "inferenceservice",
        "good",
        "-n",
        scoped.namespace,
        "--type=merge",
        "-p",
        json.dumps(
            {
                "spec": {
                    "inferenceServiceClassName": "large-llm",
                    "model": {"ref": {"name": "meta-llama/Llama-3.1-8B-Instruct"}},
                }
            }
        ),
    )
    got = json.loads(kubectl("get", "inferenceservice", "good", "-n", scoped.namespace, "-o", "json").stdout)
    assert got["spec"]["inferenceServiceClassName"] == "large-llm"


def test_an_order_with_spec_runtime_from_a_lenient_client_is_stored_without_it(
    scoped: Scoped, kubectl: Kubectl
) -> None:
    body = order_yaml("lenient", scoped.namespace) + "  runtime:\n    image: evil/vllm:latest\n"
    kubectl("create", "--validate=false", "-f", "-", input=body)
    got = json.loads(
        kubectl("get", "inferenceservice", "lenient", "-n", scoped.namespace, "-o", "json").stdout
    )
    assert sorted(got["spec"]) == ["inferenceServiceClassName", "model"]

    # The same object as a raw AdmissionReview straight to the webhook: the patch removes it, with a warning.
    raw = make_review(make_order(spec__runtime={"image": "evil/vllm:latest"}), uid="raw-1")
    with scoped.process.client() as client:
        answer = client.post("/mutate-inferenceservice", content=json.dumps(raw).encode()).json()["response"]
    assert answer["uid"] == "raw-1"
    assert answer["allowed"] is True
    assert json.loads(base64.b64decode(answer["patch"])) == [{"op": "remove", "path": "/spec/runtime"}]
    assert answer["warnings"] == [
        "removed `spec.runtime`: an order carries only its class and its model; the platform decides the rest"
    ]


def test_with_the_webhook_stopped_writes_of_orders_are_refused(scoped: Scoped, kubectl: Kubectl) -> None:
    scoped.process.stop()
    result = kubectl("create", "-f", "-", input=order_yaml("orphan", scoped.namespace), check=False)
    assert result.returncode != 0
    assert 'failed calling webhook "mutate.inferenceservices.ai.deckhouse.io"' in result.stderr
    assert stored(kubectl, "inferenceservice", "orphan", scoped.namespace) == "", "nothing may be stored"


def test_after_a_certificate_rotation_the_api_server_keeps_talking_to_the_webhook(
    scoped: Scoped, kubectl: Kubectl, wait_for: WaitFor
) -> None:
    process = scoped.process
    kubectl("create", "-f", "-", input=order_yaml("before", scoped.namespace))
    rotated = issue_serving_certificate(process.pki, now=dt.datetime.now(dt.UTC))
    assert process.served_serial() == rotated
    assert process.metric("inference_webhook_certificate_reloads_total") == 1
    baseline = process.metric("inference_webhook_tls_handshakes_total")
    scrapes = 0

    def api_server_handshakes_since_rotation() -> float:
        # Each create goes through the API server; its idle connection closes after the keep-alive
        # timeout (1 s here), so it must reconnect, and every new handshake gets the new certificate.
        nonlocal scrapes
        kubectl("create", "--dry-run=server", "-f", "-", input=order_yaml("dry", scoped.namespace))
        scrapes += 1
        return process.metric("inference_webhook_tls_handshakes_total") - baseline - scrapes

    wait_for(
        api_server_handshakes_since_rotation,
        lambda n: n > 0,
        timeout=60,
        interval=1.0,
        message="the API server to open a TLS connection on the rotated certificate",
    )
    kubectl("create", "-f", "-", input=order_yaml("after", scoped.namespace))
    assert (
        stored(kubectl, "inferenceservice", "after", scoped.namespace)
        == "inferenceservice.ai.deckhouse.io/after"
    )
    assert process.proc is not None and process.proc.poll() is None, "no restart"


def test_a_bad_class_is_refused_with_every_problem(scoped: Scoped, kubectl: Kubectl) -> None:
    name = f"{scoped.prefix}bad"
    body = f"""apiVersion: ai.deckhouse.io/v1alpha1
kind: InferenceServiceClass
metadata:
  name: {name}
spec:
  modelPolicy:
    allowedEndpointTypes: [Chat]
    parameterCount: {{min: 80B, max: 7B}}
  placement:
    deviceClassNames: [gpu.nvidia.com]
    selector: 'device.attributes["gpu.nvidia.com"].productName.matches("H100"'
  scaling: {{minReplicas: 3, maxReplicas: 1}}
  namespaceSelector:
    matchLabels: {{team: "no spaces"}}
"""
    result = kubectl("create", "-f", "-", input=body, check=False)
    assert result.returncode != 0
    assert (
        'admission webhook "validate.inferenceserviceclasses.ai.deckhouse.io" denied the request'
        in result.stderr
    )
    assert "`spec.modelPolicy.parameterCount.min`: must not be greater than" in result.stderr
    assert (
        "`spec.placement.selector`: must be a CEL expression DRA can evaluate: syntax error at line 1"
        in result.stderr
    )
    assert (
        "`spec.scaling.minReplicas`: must not be greater than `spec.scaling.maxReplicas` (3 > 1)"
        in result.stderr
    )
    assert "`spec.namespaceSelector.matchLabels.team`: must be a label value, not" in result.stderr
    assert stored(kubectl, "inferenceserviceclass", name) == ""


def test_a_bad_recipe_is_refused_and_a_good_one_admitted(scoped: Scoped, kubectl: Kubectl) -> None:
    template = """apiVersion: ai.deckhouse.io/v1alpha1
kind: InferenceRecipe
metadata:
  name: {name}
spec:
  runtime: vLLM
  image: {image}
  endpointTypes: [Chat]
  formats: [Safetensors]
  quantizations:
    - {{method: {method}, minComputeCapability: "7.5"}}
    - {{method: fp8, minComputeCapability: "8.9"}}
"""
    bad, good = f"{scoped.prefix}bad", f"{scoped.prefix}good"
    result = kubectl(
        "create",
        "-f",
        "-",
        input=template.format(name=bad, method="fp8", image=runtime_images.pinned().image),
        check=False,
    )
    assert result.returncode != 0
    assert '`spec.quantizations[1].method`: must not repeat "fp8"' in result.stderr
    assert stored(kubectl, "inferencerecipe", bad) == ""
    kubectl(
        "create",
        "-f",
        "-",
        input=template.format(name=good, method="awq", image=runtime_images.pinned().image),
    )
    try:
        assert stored(kubectl, "inferencerecipe", good) == f"inferencerecipe.ai.deckhouse.io/{good}"
    finally:
        kubectl("delete", "inferencerecipe", good, "--wait=false")


@pytest.mark.usefixtures("cluster_webhook")
def test_the_cluster_wide_fixture_admits_and_refuses_orders_in_any_namespace(
    kubectl: Kubectl, namespace: str, wait_for: WaitFor
) -> None:
    wait_for(
        lambda: kubectl(
            "create", "--dry-run=server", "-f", "-",
            input=order_yaml("probe", namespace, WEBHOOK_ONLY_BAD_MODEL), check=False,
        ).stderr,
        lambda err: 'admission webhook "validate.inferenceservices.ai.deckhouse.io" denied the request' in err,
        message="the API server to call the cluster-wide webhook",
    )  # fmt: skip
    kubectl("create", "-f", "-", input=order_yaml("good", namespace))
    assert stored(kubectl, "inferenceservice", "good", namespace) == "inferenceservice.ai.deckhouse.io/good"
