"""From order to Ready against the real control plane: the happy path, edits, deletion, restarts."""

from __future__ import annotations

import base64
import json
import re
import ssl

import httpx
import pytest

from shared import names
from testkit.platform import HF_TOKEN, Platform, hf

pytestmark = pytest.mark.cluster

MODEL = "Qwen/Qwen2.5-32B-Instruct-AWQ"


def owned(p: Platform, namespace: str) -> dict[str, list[str]]:
    kinds = (
        "deployment,service,hpa,scaledobjects.keda.sh,pvc,resourceclaimtemplate,certificate.cert-manager.io,"
        "secret,ingress"
    )
    out = p.kubectl("get", kinds, "-n", namespace, "-o", "json").stdout
    got: dict[str, list[str]] = {}
    for item in json.loads(out)["items"]:
        if any(ref.get("kind") == "InferenceService" for ref in item["metadata"].get("ownerReferences", [])):
            got.setdefault(item["kind"], []).append(item["metadata"]["name"])
    return got


def call(p: Platform, url: str, token: str | None) -> httpx.Response:
    """GET <url>/v1/models at the runtime stand-in, verifying TLS for the endpoint's own host name."""
    host = url.removeprefix("https://")
    ctx = ssl.create_default_context(cafile=str(p.ca_file))
    headers = {"Host": host}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    with httpx.Client(verify=ctx, trust_env=False, timeout=10) as c:
        return c.get(
            f"https://{p.runtime.address}/v1/models", headers=headers, extensions={"sni_hostname": host}
        )


def test_the_guides_order_reaches_ready_with_endpoint_token_and_every_status_field(
    platform: Platform, ns: str
) -> None:
    platform.create_order(ns, "support-llm", hf(MODEL))
    obj = platform.wait_phase(ns, "support-llm", "Ready", timeout=90)
    st = obj["status"]
    assert st["endpoint"] == {"url": f"https://support-llm.{ns}.svc", "type": "ClusterLocal"}
    assert st["authSecretName"] == "support-llm-auth"
    assert st["model"]["endpointType"] == "Chat"
    assert st["model"]["architecture"] == "Qwen2ForCausalLM"
    assert st["model"]["format"] == "Safetensors"
    assert st["model"]["quantization"] == "awq-4bit"
    assert st["model"]["parameterCount"] > 30_000_000_000
    assert st["model"]["contextLength"] == 32768
    assert re.fullmatch(r"[0-9a-f]{40}", st["model"]["revision"])
    assert st["constraints"] == {
        "minReplicas": 1,
        "maxReplicas": 4,
        "priorityClassName": "inference-default",
        "metric": "QueueDepth",
        "target": 2,
    }
    res = st["resolved"]
    for key in (
        "deviceClass",
        "acceleratorProductName",
        "acceleratorMemoryGiB",
        "acceleratorCount",
        "placementMode",
        "sharingMode",
        "sharePercent",
        "cpu",
        "memory",
        "modelVolume",
        "recipe",
    ):
        assert res.get(key) not in (None, ""), f"status.resolved.{key} is empty"
    assert res["replanCount"] == 0
    assert res["recipe"] == "vllm"
    assert st["observedGeneration"] == obj["metadata"]["generation"]
    conds = {c["type"]: (c["status"], c["reason"]) for c in st["conditions"]}
    assert conds == {
        "ClassResolved": ("True", "Resolved"),
        "ModelResolved": ("True", "Resolved"),
        "Planned": ("True", "Planned"),
        "WorkloadReady": ("True", "Available"),
        "Ready": ("True", "Serving"),
        "ScalingHealthy": ("True", "ScalingHealthy"),
    }
    # The token: at least 256 bits, and it opens the endpoint (the stand-in enforces it).
    secret = platform.get("secret", "support-llm-auth", ns)
    assert secret is not None
    token = base64.b64decode(secret["data"]["token"]).decode()
    assert len(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))) >= 32
    models = call(platform, st["endpoint"]["url"], token)
    assert models.status_code == 200
    assert models.json()["data"][0]["id"] == MODEL
    assert call(platform, st["endpoint"]["url"], "wrong-token").status_code == 401
    assert call(platform, st["endpoint"]["url"], None).status_code == 401
    # Every object is named after the order and owned by it.
    got = owned(platform, ns)
    assert got["Deployment"] == ["support-llm"]
    assert got["Service"] == ["support-llm"]
    # The autoscaler is KEDA's: the order owns the ScaledObject, KEDA's HPA keda-hpa-<order> is the
    # ScaledObject's, and the controller applies no HPA of its own.
    assert got["ScaledObject"] == ["support-llm"]
    assert "HorizontalPodAutoscaler" not in got
    assert got["PersistentVolumeClaim"][0].startswith("support-llm-model-")
    assert got["Certificate"] == ["support-llm-tls"]
    # The token Secret the controller minted, and <order>-tls, which cert-manager wrote with the
    # Certificate's secretTemplate labels and the order adopted.
    assert sorted(got["Secret"]) == ["support-llm-auth", "support-llm-tls"]
    assert got["ResourceClaimTemplate"][0].startswith("support-llm-gpu-")
    # The pod's claim was allocated by the real scheduler on a device of the planned product.
    claims = json.loads(platform.kubectl("get", "resourceclaims", "-n", ns, "-o", "json").stdout)["items"]
    assert claims and all(c.get("status", {}).get("allocation") for c in claims)
    # Events on the order record the transitions.
    events = platform.kubectl(
        "get", "events", "-n", ns, "--field-selector", "involvedObject.name=support-llm", "-o", "json"
    ).stdout
    reasons = {e["reason"] for e in json.loads(events)["items"]}
    assert {"Serving", "PhaseReady"} <= reasons


def test_kubectl_get_shows_class_model_type_phase_reason_and_url(platform: Platform, ns: str) -> None:
    platform.create_order(ns, "cols", hf("Qwen/Qwen2.5-0.5B-Instruct"))
    platform.wait_phase(ns, "cols", "Ready", timeout=90)
    out = platform.kubectl("get", "inferenceservice", "cols", "-n", ns).stdout
    header, row = out.splitlines()[:2]
    assert header.split() == ["NAME", "CLASS", "MODEL", "TYPE", "PHASE", "REASON", "URL", "AGE"]
    assert row.split()[:7] == [
        "cols",
        "default-llm",
        "Qwen/Qwen2.5-0.5B-Instruct",
        "Chat",
        "Ready",
        "Serving",
        f"https://cols.{ns}.svc",
    ]


def test_editing_the_model_replans_once_and_reapplies_the_workload(platform: Platform, ns: str) -> None:
    platform.create_order(ns, "edit", hf("Qwen/Qwen2.5-0.5B-Instruct"))
    platform.wait_phase(ns, "edit", "Ready", timeout=90)
    before = platform.get("deployment", "edit", ns)
    assert before is not None
    platform.kubectl(
        "patch",
        "inferenceservice",
        "edit",
        "-n",
        ns,
        "--type=merge",
        "-p",
        json.dumps({"spec": {"model": {"ref": {"name": "Qwen/Qwen2.5-7B-Instruct"}}}}),
    )
    obj = platform.wait_phase(ns, "edit", "Ready", timeout=90)
    planned = platform.condition(obj, "Planned")
    assert planned["reason"] == "Planned", planned
    assert obj["status"]["resolved"]["replanCount"] == 1
    assert obj["status"]["model"]["parameterCount"] > 7_000_000_000
    after = platform.get("deployment", "edit", ns)
    assert after is not None
    args = after["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "Qwen/Qwen2.5-7B-Instruct" in " ".join(args)
    assert after["metadata"]["generation"] > before["metadata"]["generation"]


def test_deleting_the_order_deletes_what_it_owns_and_leaves_the_users_hf_secret(
    platform: Platform, ns: str
) -> None:
    platform.kubectl("create", "secret", "generic", "hf-token", "-n", ns, f"--from-literal=token={HF_TOKEN}")
    platform.create_order(
        ns, "gated", hf("meta-llama/Llama-3.1-8B-Instruct", authSecretRef={"name": "hf-token"})
    )
    platform.wait_phase(ns, "gated", "Ready", timeout=90)
    dep = platform.get("deployment", "gated", ns)
    assert dep is not None
    fetcher = next(
        c for c in dep["spec"]["template"]["spec"]["initContainers"] if c["name"] == names.FETCHER_CONTAINER
    )
    hf_env = {e["name"]: e for e in fetcher["env"]}["HF_TOKEN"]
    assert hf_env["valueFrom"]["secretKeyRef"] == {"name": "hf-token", "key": "token"}
    user_secret = platform.get("secret", "hf-token", ns)
    assert user_secret is not None and not user_secret["metadata"].get("ownerReferences")
    assert owned(platform, ns)
    platform.kubectl("delete", "inferenceservice", "gated", "-n", ns, "--wait=true")
    from tests.integration.conftest import wait_for

    wait_for(
        lambda: owned(platform, ns),
        lambda got: got == {},
        timeout=60,
        message="the garbage collector to delete every owned object",
    )
    after = platform.get("secret", "hf-token", ns)
    assert after is not None
    assert after["metadata"]["resourceVersion"] == user_secret["metadata"]["resourceVersion"]


def test_an_edited_deployment_and_a_deleted_service_are_restored(platform: Platform, ns: str) -> None:
    """The owned objects are the controller's: a hand edit is undone and a deletion re-created,
    with a DriftCorrected Event on the order naming the changed field."""
    from tests.integration.conftest import wait_for

    platform.create_order(ns, "drift", hf("Qwen/Qwen2.5-0.5B-Instruct"))
    platform.wait_phase(ns, "drift", "Ready", timeout=90)
    dep = platform.get("deployment", "drift", ns)
    svc = platform.get("service", "drift", ns)
    assert dep is not None and svc is not None
    container = dep["spec"]["template"]["spec"]["containers"][0]
    image = container["image"]

    platform.kubectl(
        "set", "image", "deployment/drift", "-n", ns, f"{container['name']}=example.com/other:latest"
    )
    platform.kubectl("delete", "service", "drift", "-n", ns, "--wait=true")

    restored = wait_for(
        lambda: platform.get("deployment", "drift", ns),
        lambda d: d is not None and d["spec"]["template"]["spec"]["containers"][0]["image"] == image,
        timeout=60,
        message="the controller to restore the Deployment's image",
    )
    assert restored is not None
    back = wait_for(
        lambda: platform.get("service", "drift", ns),
        lambda s: s is not None,
        timeout=60,
        message="the controller to re-create the Service",
    )
    assert back is not None and back["metadata"]["uid"] != svc["metadata"]["uid"]
    assert back["spec"]["ports"] == svc["spec"]["ports"]

    def drift_events() -> list[str]:
        out = platform.kubectl(
            "get", "events", "-n", ns, "--field-selector", "involvedObject.name=drift", "-o", "json"
        ).stdout
        return [
            e.get("note") or e.get("message") or ""
            for e in json.loads(out)["items"]
            if e["reason"] == "DriftCorrected"
        ]

    notes = wait_for(drift_events, bool, timeout=30, message="a DriftCorrected Event on the order")
    assert any("Deployment drift" in n and ".image" in n for n in notes), notes
    assert platform.order(ns, "drift")["status"]["phase"] == "Ready"
