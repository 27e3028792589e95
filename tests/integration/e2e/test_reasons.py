"""Every reason of api.md section 3, each shown on a real order against the real control plane.

Each test builds the situation that causes the reason (a missing class, a gated repo, a full
device, a failing endpoint ...), waits for the condition, and checks the phase the reason implies.
Most also undo the cause and watch the order recover by itself.
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

import pytest

from controller.render.fetcher_program import patterns
from shared import names, runtime_images
from testkit.platform import HF_TOKEN, SETTINGS, Platform, hf
from tests.integration.conftest import wait_for

pytestmark = pytest.mark.cluster
# KEDA makes the HPA that holds a Deployment at the class's minReplicas (the controller leaves
# replicas to it): without it, test_scale_up_blocked_makes_the_order_degraded's order of
# minReplicas 2 would run one replica and never ask for the second.
PLATFORM_AUTOSCALING = True

SMALL = "Qwen/Qwen2.5-0.5B-Instruct"
L4 = 'device.attributes["gpu.nvidia.com"].productName == "NVIDIA L4"'
A100 = 'device.attributes["gpu.nvidia.com"].productName == "NVIDIA A100-SXM4-40GB"'


def reason_of(p: Platform, obj: dict[str, Any], type_: str) -> tuple[str, str]:
    c = p.condition(obj, type_)
    return c.get("status", ""), c.get("reason", "")


def token_secret(p: Platform, ns: str, token: str = HF_TOKEN) -> None:
    p.kubectl("create", "secret", "generic", "hf-token", "-n", ns, f"--from-literal=token={token}")


def free_l4_uuid(p: Platform) -> str:
    """The uuid of an L4 no claim holds now."""
    return free_l4_uuids(p, 1)[0]


def free_l4_uuids(p: Platform, n: int) -> list[str]:
    """The uuids of ``n`` L4s no claim holds now."""
    found: list[str] = []
    slices = json.loads(p.kubectl("get", "resourceslices", "-o", "json").stdout)["items"]
    claims = json.loads(p.kubectl("get", "resourceclaims", "-A", "-o", "json").stdout)["items"]
    held = {
        (r["pool"], r["device"])
        for c in claims
        for r in (c.get("status", {}).get("allocation", {}).get("devices", {}).get("results") or [])
    }
    for s in sorted(slices, key=lambda s: s["metadata"]["name"]):
        for d in s["spec"]["devices"]:
            if (
                d["attributes"]["productName"]["string"] == "NVIDIA L4"
                and (s["spec"]["pool"]["name"], d["name"]) not in held
            ):
                found.append(str(d["attributes"]["uuid"]["string"]))
                if len(found) == n:
                    return found
    pytest.fail(f"fewer than {n} free L4s in the fleet")


# -- ClassResolved -------------------------------------------------------------------------------


def test_class_not_found_and_nothing_later_is_reported(platform: Platform, ns: str) -> None:
    platform.create_order(ns, "o", hf("nobody/no-such-model"), klass="no-such-class")
    obj = platform.wait_reason(ns, "o", "ClassResolved", "ClassNotFound")
    assert reason_of(platform, obj, "ModelResolved") == ("Unknown", "Awaiting"), (
        "a bad class hides model errors"
    )
    assert reason_of(platform, obj, "Ready") == ("False", "ClassNotFound")
    assert obj["status"]["phase"] == "Pending"
    assert "no-such-class" in platform.condition(obj, "ClassResolved")["message"]


def test_class_not_ready_when_it_names_a_missing_recipe(platform: Platform, ns: str) -> None:
    klass = platform.create_class({"recipes": ["no-such-recipe"]})
    platform.create_order(ns, "o", hf(SMALL), klass=klass)
    obj = platform.wait_reason(ns, "o", "ClassResolved", "ClassNotReady")
    assert obj["status"]["phase"] == "Pending"
    cls = wait_for(
        lambda: platform.get("inferenceserviceclass", klass) or {},
        lambda c: platform.condition(c, "Ready").get("reason") == "RecipeNotFound",
        message="the class's own Ready condition",
    )
    assert platform.condition(cls, "Ready")["status"] == "False"


def test_source_not_allowed_by_the_class(platform: Platform, ns: str) -> None:
    klass = platform.create_class(
        {"modelPolicy": {"allowedEndpointTypes": ["Chat"], "allowedSources": ["Catalog"]}}
    )
    platform.create_order(ns, "o", hf(SMALL), klass=klass)
    obj = platform.wait_reason(ns, "o", "ModelResolved", "SourceNotAllowed")
    assert obj["status"]["phase"] == "Failed"


# -- ModelResolved -------------------------------------------------------------------------------


def test_model_not_found(platform: Platform, ns: str) -> None:
    platform.create_order(ns, "o", hf("nobody/no-such-model"))
    obj = platform.wait_reason(ns, "o", "ModelResolved", "ModelNotFound")
    assert obj["status"]["phase"] == "Failed"


def test_model_access_denied_without_a_token_and_with_a_bad_one(platform: Platform, ns: str) -> None:
    platform.create_order(ns, "anon", hf("meta-llama/Llama-3.1-8B"))
    obj = platform.wait_reason(ns, "anon", "ModelResolved", "ModelAccessDenied")
    assert obj["status"]["phase"] == "Failed"
    token_secret(platform, ns, token="hf_wrong")
    platform.create_order(ns, "bad", hf("meta-llama/Llama-3.1-8B", authSecretRef={"name": "hf-token"}))
    platform.wait_reason(ns, "bad", "ModelResolved", "ModelAccessDenied")


def test_auth_secret_not_found_recovers_when_the_secret_appears(platform: Platform, ns: str) -> None:
    platform.create_order(
        ns, "o", hf("meta-llama/Llama-3.1-8B", authSecretRef={"name": "hf-token", "key": "hf"})
    )
    obj = platform.wait_reason(ns, "o", "ModelResolved", "AuthSecretNotFound")
    assert obj["status"]["phase"] == "Pending"
    platform.kubectl("create", "secret", "generic", "hf-token", "-n", ns, f"--from-literal=hf={HF_TOKEN}")
    platform.wait_phase(ns, "o", "Ready", timeout=90)


def test_model_source_unavailable_is_retried_until_the_hub_answers(platform: Platform, ns: str) -> None:
    token_secret(platform, ns)  # the repository is gated
    platform.mirror.inject_fault(503, match="Mistral-7B")
    try:
        platform.create_order(
            ns, "o", hf("mistralai/Mistral-7B-Instruct-v0.3", authSecretRef={"name": "hf-token"})
        )
        obj = platform.wait_reason(ns, "o", "ModelResolved", "ModelSourceUnavailable")
        assert obj["status"]["phase"] == "Pending"
    finally:
        platform.mirror.clear_faults()
    platform.wait_phase(ns, "o", "Ready", timeout=90)


def test_endpoint_type_policy_conflict(platform: Platform, ns: str) -> None:
    klass = platform.create_class({"modelPolicy": {"allowedEndpointTypes": ["Chat"]}})
    platform.create_order(ns, "o", hf("BAAI/bge-large-en-v1.5"), klass=klass)
    obj = platform.wait_reason(ns, "o", "ModelResolved", "EndpointTypePolicyConflict")
    assert obj["status"]["phase"] == "Failed"
    assert "Embeddings" in platform.condition(obj, "ModelResolved")["message"]


def test_format_not_allowed(platform: Platform, ns: str) -> None:
    platform.create_order(ns, "o", hf("bartowski/Meta-Llama-3.1-8B-Instruct-GGUF"))
    obj = platform.wait_reason(ns, "o", "ModelResolved", "FormatNotAllowed")
    assert obj["status"]["phase"] == "Failed"


def test_parameter_count_not_allowed(platform: Platform, ns: str) -> None:
    klass = platform.create_class(
        {"modelPolicy": {"allowedEndpointTypes": ["Chat"], "parameterCount": {"max": "1B"}}}
    )
    platform.create_order(ns, "o", hf("Qwen/Qwen2.5-7B-Instruct"), klass=klass)
    obj = platform.wait_reason(ns, "o", "ModelResolved", "ParameterCountNotAllowed")
    assert obj["status"]["phase"] == "Failed"


def test_a_catalog_model_not_ready_then_ready(platform: Platform, ns: str) -> None:
    name = f"qwen-{uuid.uuid4().hex[:5]}"
    platform.apply(
        {
            "apiVersion": "ai.deckhouse.io/v1alpha1",
            "kind": "ClusterModel",
            "metadata": {"name": name},
            "spec": {},
        }
    )
    platform.cluster_objects.append(("clustermodel", name))
    platform.kubectl(
        "patch",
        "clustermodel",
        name,
        "--subresource=status",
        "--type=merge",
        "-p",
        json.dumps({"status": {"phase": "Pending"}}),
    )
    platform.create_order(ns, "o", {"src": "Catalog", "ref": {"name": name}})
    obj = platform.wait_reason(ns, "o", "ModelResolved", "ModelNotReady")
    assert obj["status"]["phase"] == "Pending"
    status = {
        "phase": "Ready",
        "resolved": {
            "supportedEndpointTypes": ["Chat"],
            "format": "Safetensors",
            "parameterCount": 494_032_768,
            "quantization": "none",
            "architecture": "Qwen2ForCausalLM",
            "contextWindowTokens": 32768,
            "numAttentionHeads": 14,
            "numKeyValueHeads": 2,
            "numHiddenLayers": 24,
            "hiddenSize": 896,
            "torchDtype": "bfloat16",
        },
        "source": {"uri": f"hf://{SMALL}"},
    }
    platform.kubectl(
        "patch",
        "clustermodel",
        name,
        "--subresource=status",
        "--type=merge",
        "-p",
        json.dumps({"status": status}),
    )
    obj = platform.wait_reason(ns, "o", "ModelResolved", "Resolved")
    assert obj["status"]["model"]["parameterCount"] == 494_032_768
    # the fetcher downloads the catalog's location, not the catalog object's name
    platform.wait_reason(ns, "o", "Planned", "Planned")
    deadline = time.monotonic() + 30
    while (dep := platform.get("deployment", "o", ns)) is None and time.monotonic() < deadline:
        time.sleep(0.5)
    assert dep is not None
    fetcher = next(
        c for c in dep["spec"]["template"]["spec"]["initContainers"] if c["name"] == names.FETCHER_CONTAINER
    )
    assert fetcher["args"][:2] == ["download", SMALL]
    assert patterns(["hf", *fetcher["args"]]) and name not in fetcher["args"]


def test_catalog_disabled_in_the_module_settings(platform: Platform, ns: str) -> None:
    platform.kubectl(
        "patch",
        "configmap",
        "inference-settings",
        "-n",
        "d8-inference",
        "--type=merge",
        "-p",
        json.dumps({"data": {"catalogEnabled": "false"}}),
    )
    try:
        platform.controller.restart()
        platform.create_order(ns, "o", {"src": "Catalog", "ref": {"name": "anything"}})
        obj = platform.wait_reason(ns, "o", "ModelResolved", "CatalogDisabled")
        assert obj["status"]["phase"] == "Failed"
    finally:
        platform.kubectl(
            "patch",
            "configmap",
            "inference-settings",
            "-n",
            "d8-inference",
            "--type=merge",
            "-p",
            json.dumps({"data": {"catalogEnabled": "true"}}),
        )
        platform.controller.restart()
    platform.wait_reason(ns, "o", "ModelResolved", "ModelNotFound")


# -- Planned -------------------------------------------------------------------------------------


def test_no_capacity_when_the_only_allowed_device_is_taken(platform: Platform, ns: str) -> None:
    uid = free_l4_uuid(platform)
    klass = platform.create_class(
        {
            "placement": {
                "deviceClassNames": ["gpu.nvidia.com"],
                "selector": f'device.attributes["gpu.nvidia.com"].uuid == "{uid}"',
            }
        }
    )
    platform.create_order(ns, "first", hf(SMALL), klass=klass)
    platform.wait_phase(ns, "first", "Ready", timeout=90)
    platform.create_order(ns, "second", hf(SMALL), klass=klass)
    obj = platform.wait_reason(ns, "second", "Planned", "NoCapacity")
    assert obj["status"]["phase"] == "Pending"
    platform.kubectl("delete", "inferenceservice", "first", "-n", ns)
    platform.wait_phase(ns, "second", "Ready", timeout=120)


def test_no_accelerator_with_enough_memory(platform: Platform, ns: str) -> None:
    token_secret(platform, ns)
    klass = platform.create_class(
        {
            "placement": {
                "deviceClassNames": ["gpu.nvidia.com"],
                "selector": L4,
                "maxAcceleratorsPerReplica": 1,
            }
        }
    )
    platform.create_order(
        ns, "o", hf("meta-llama/Llama-3.1-70B-Instruct", authSecretRef={"name": "hf-token"}), klass=klass
    )
    obj = platform.wait_reason(ns, "o", "Planned", "NoAcceleratorWithEnoughMemory")
    assert obj["status"]["phase"] == "Pending"
    assert "GiB" in platform.condition(obj, "Planned")["message"]


def test_quantization_mismatch_for_fp8_on_a100(platform: Platform, ns: str) -> None:
    """The bundled recipe serves FP8 from 8.0 on (an A100 runs it weight-only through Marlin), so the
    mismatch takes a recipe that asks 8.9, as recipes did before issue 20."""
    recipe = f"e2e-fp8-ada-{uuid.uuid4().hex[:6]}"
    platform.apply(
        {
            "apiVersion": "ai.deckhouse.io/v1alpha1",
            "kind": "InferenceRecipe",
            "metadata": {"name": recipe},
            "spec": {
                "runtime": "vLLM",
                "image": runtime_images.pinned().image,
                "endpointTypes": ["Chat"],
                "formats": ["Safetensors"],
                "quantizations": [{"method": "fp8", "minComputeCapability": "8.9"}],
            },
        }
    )
    platform.cluster_objects.append(("inferencerecipe", recipe))
    klass = platform.create_class(
        {"placement": {"deviceClassNames": ["gpu.nvidia.com"], "selector": A100}, "recipes": [recipe]}
    )
    platform.create_order(ns, "o", hf("Qwen/Qwen3-8B-FP8"), klass=klass)
    obj = platform.wait_reason(ns, "o", "Planned", "QuantizationMismatch")
    assert obj["status"]["phase"] == "Failed"
    assert "8.9" in platform.condition(obj, "Planned")["message"]


def test_no_compatible_runtime_for_gguf(platform: Platform, ns: str) -> None:
    klass = platform.create_class(
        {"modelPolicy": {"allowedEndpointTypes": ["Chat"], "allowedFormats": ["GGUF"]}}
    )
    platform.create_order(ns, "o", hf("bartowski/Meta-Llama-3.1-8B-Instruct-GGUF"), klass=klass)
    obj = platform.wait_reason(ns, "o", "Planned", "NoCompatibleRuntimeAvailable")
    assert obj["status"]["phase"] == "Failed"


def test_placement_undecidable_when_a_device_class_does_not_exist(platform: Platform, ns: str) -> None:
    klass = platform.create_class({"placement": {"deviceClassNames": ["tpu.example.com"]}})
    platform.create_order(ns, "o", hf(SMALL), klass=klass)
    obj = platform.wait_reason(ns, "o", "Planned", "PlacementUndecidable")
    assert obj["status"]["phase"] == "Failed"
    assert "tpu.example.com" in platform.condition(obj, "Planned")["message"]


def test_placement_undecidable_when_the_selector_fails_on_a_device(platform: Platform, ns: str) -> None:
    # Compiles, but reading an attribute no device has is an evaluation error.
    selector = 'device.attributes["gpu.nvidia.com"].noSuchAttribute == "x"'
    klass = platform.create_class(
        {"placement": {"deviceClassNames": ["gpu.nvidia.com"], "selector": selector}}
    )
    platform.create_order(ns, "o", hf(SMALL), klass=klass)
    obj = platform.wait_reason(ns, "o", "Planned", "PlacementUndecidable")
    assert obj["status"]["phase"] == "Failed"


def test_resource_claim_exhausted_after_falling_back_through_every_device_class(
    platform: Platform, ns: str
) -> None:
    """The planner sees free A100s, but their nodes are cordoned: the real scheduler cannot allocate.
    After the grace period the planner falls back to the next device class (a replan), then gives up."""
    klass = platform.create_class(
        {
            "placement": {
                "deviceClassNames": ["gpu.nvidia.com", "mig.nvidia.com"],
                "selector": A100,
                "sharingModes": ["Exclusive", "MIG"],
            }
        }
    )
    nodes = ["gpu-a100-0", "gpu-a100-mig-0"]
    for n in nodes:
        platform.kubectl("cordon", n)
    try:
        platform.create_order(ns, "o", hf(SMALL), klass=klass)
        platform.wait_reason(ns, "o", "WorkloadReady", "Unschedulable", timeout=60)
        obj = platform.wait_reason(ns, "o", "Planned", "ResourceClaimExhausted", timeout=120)
        # Two recomputations after the first plan: the fallback to mig.nvidia.com, then the one
        # that found no device class left.
        assert obj["status"]["resolved"]["replanCount"] == 2
        assert obj["status"]["resolved"]["triedDeviceClasses"] == ["gpu.nvidia.com", "mig.nvidia.com"]
        assert obj["status"]["phase"] == "Pending"
    finally:
        for n in nodes:
            platform.kubectl("uncordon", n)


# -- WorkloadReady -------------------------------------------------------------------------------


def test_a_node_selector_no_node_matches_is_unschedulable_and_never_a_fallback(
    platform: Platform, ns: str
) -> None:
    """Node affinity is not a claim failure: the order says what the scheduler said, and keeps its plan."""
    klass = platform.create_class(
        {
            "placement": {
                "deviceClassNames": ["gpu.nvidia.com", "mig.nvidia.com"],
                "sharingModes": ["Exclusive", "MIG"],
                "nodeSelector": {"example.com/pool": "nowhere"},
            }
        }
    )
    platform.create_order(ns, "o", hf(SMALL), klass=klass)
    obj = platform.wait_reason(ns, "o", "WorkloadReady", "Unschedulable", timeout=90)
    assert "node affinity/selector" in platform.condition(obj, "WorkloadReady")["message"]
    time.sleep(float(SETTINGS["claimGraceSeconds"]) + 6)  # past the grace a claim failure would have
    obj = platform.order(ns, "o")
    assert platform.condition(obj, "Planned")["reason"] == "Planned"
    assert obj["status"]["resolved"]["replanCount"] == 0


def test_a_taint_is_unschedulable_with_the_schedulers_words_and_never_a_fallback(
    platform: Platform, ns: str
) -> None:
    """Only the DRA plugin's "cannot allocate all claims" moves an order to its next device class:
    a taint nobody tolerates is reported as it is, and the plan stays."""
    klass = platform.create_class(
        {
            "placement": {
                "deviceClassNames": ["gpu.nvidia.com", "mig.nvidia.com"],
                "sharingModes": ["Exclusive", "MIG"],
            }
        }
    )
    nodes = [
        n["metadata"]["name"]
        for n in json.loads(platform.kubectl("get", "nodes", "-o", "json").stdout)["items"]
    ]
    for n in nodes:
        platform.kubectl("taint", "node", n, "e2e-hold=1:NoSchedule", "--overwrite")
    try:
        platform.create_order(ns, "o", hf(SMALL), klass=klass)
        obj = platform.wait_reason(ns, "o", "WorkloadReady", "Unschedulable", timeout=90)
        assert "untolerated taint" in platform.condition(obj, "WorkloadReady")["message"]
        time.sleep(float(SETTINGS["claimGraceSeconds"]) + 6)  # past the grace a claim failure would have
        obj = platform.order(ns, "o")
        assert platform.condition(obj, "Planned")["reason"] == "Planned"
        assert obj["status"]["resolved"]["replanCount"] == 0
        assert not obj["status"]["resolved"].get("triedDeviceClasses")
    finally:
        for n in nodes:
            platform.kubectl("taint", "node", n, "e2e-hold-", check=False)
    platform.wait_phase(ns, "o", "Ready", timeout=120)


def _fallback_class(platform: Platform, **placement: Any) -> str:
    """A class with a second device class to fall back to: a false claim failure would show as a replan."""
    return platform.create_class(
        {
            "placement": {
                "deviceClassNames": ["gpu.nvidia.com", "mig.nvidia.com"],
                "sharingModes": ["Exclusive", "MIG"],
                **placement,
            }
        }
    )


def _assert_kept_its_plan(platform: Platform, ns: str, name: str) -> dict[str, Any]:
    """Past the grace a claim failure would have: still Unschedulable, the first plan, no fallback."""
    time.sleep(float(SETTINGS["claimGraceSeconds"]) + 6)
    obj = platform.order(ns, name)
    status = obj["status"]
    assert reason_of(platform, obj, "Planned") == ("True", "Planned"), (
        f"never NoCapacity nor a fallback: {status}"
    )
    assert reason_of(platform, obj, "WorkloadReady") == ("False", "Unschedulable"), status
    assert reason_of(platform, obj, "Ready") == ("False", "Unschedulable"), status
    assert status["phase"] == "Pending"
    assert status["resolved"]["replanCount"] == 0, status
    assert not status["resolved"].get("triedDeviceClasses"), status
    return obj


def _patch_allocatable(platform: Platform, node: str, allocatable: dict[str, str]) -> None:
    platform.kubectl(
        "patch",
        "node",
        node,
        "--subresource=status",
        "--type=merge",
        "-p",
        json.dumps({"status": {"allocatable": allocatable}}),
    )


def test_nodes_without_the_cpu_or_memory_asked_for_are_unschedulable_never_a_fallback_and_recover(
    platform: Platform, ns: str
) -> None:
    """The planned L4s are free, but every L4 node lacks the cpu (two) or the memory (two) the runtime
    requests. The scheduler says "Insufficient cpu/memory" on those nodes and "cannot allocate all
    claims" on every other node (no L4 there): the devices are not what is missing, so the order says
    what the scheduler said, keeps its plan, and is Ready once the nodes have room again."""
    nodes = json.loads(
        platform.kubectl("get", "nodes", "-l", "nvidia.com/gpu.product=NVIDIA-L4", "-o", "json").stdout
    )["items"]
    assert len(nodes) >= 2
    before = {n["metadata"]["name"]: dict(n["status"]["allocatable"]) for n in nodes}
    short = {
        name: {"cpu": "1"} if i % 2 == 0 else {"memory": "1Gi"}  # the runtime asks >= 4 cpu, >= 6Gi
        for i, name in enumerate(sorted(before))
    }
    klass = _fallback_class(platform, selector=L4)
    try:
        for name, allocatable in short.items():
            _patch_allocatable(platform, name, allocatable)
        platform.create_order(ns, "o", hf(SMALL), klass=klass)
        obj = platform.wait_reason(ns, "o", "WorkloadReady", "Unschedulable", timeout=90)
        message = platform.condition(obj, "WorkloadReady")["message"]
        assert "Insufficient cpu" in message and "Insufficient memory" in message, message
        assert "cannot allocate all claims" in message, f"the other nodes have no L4: {message}"
        _assert_kept_its_plan(platform, ns, "o")
    finally:
        for name, allocatable in before.items():
            _patch_allocatable(platform, name, {k: allocatable[k] for k in ("cpu", "memory")})
    obj = platform.wait_phase(ns, "o", "Ready", timeout=120)
    assert reason_of(platform, obj, "WorkloadReady") == ("True", "Available")
    assert obj["status"]["resolved"]["replanCount"] == 0


def _set_model_storage_class(platform: Platform, name: str) -> None:
    platform.kubectl(
        "patch",
        "configmap",
        "inference-settings",
        "-n",
        "d8-inference",
        "--type=merge",
        "-p",
        json.dumps({"data": {"modelStorageClass": name}}),
    )
    platform.controller.restart()


@pytest.mark.parametrize(
    ("binding", "words"),
    [
        ("Immediate", "pod has unbound immediate PersistentVolumeClaims"),
        ("WaitForFirstConsumer", "didn't find available persistent volumes to bind"),
    ],
)
def test_a_model_volume_that_cannot_bind_is_unschedulable_and_recovers_when_a_volume_appears(
    platform: Platform, ns: str, binding: str, words: str
) -> None:
    """The module's model volume class has no provisioner and no PersistentVolume: the model volume
    cannot bind, which is not a capacity or claim question. A fitting volume appearing is the fix."""
    storage_class = f"e2e-empty-{uuid.uuid4().hex[:6]}"
    platform.apply(
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": storage_class},
            "provisioner": "kubernetes.io/no-provisioner",
            "volumeBindingMode": binding,
            "reclaimPolicy": "Retain",
        }
    )
    platform.cluster_objects.append(("storageclass", storage_class))
    volume = f"e2e-{storage_class}"
    try:
        _set_model_storage_class(platform, storage_class)
        platform.create_order(ns, "o", hf(SMALL), klass=_fallback_class(platform))
        obj = platform.wait_reason(ns, "o", "WorkloadReady", "Unschedulable", timeout=90)
        message = platform.condition(obj, "WorkloadReady")["message"]
        assert words in message, message
        _assert_kept_its_plan(platform, ns, "o")
        claims = json.loads(platform.kubectl("get", "pvc", "-n", ns, "-o", "json").stdout)["items"]
        assert [c["status"]["phase"] for c in claims] == ["Pending"], "the model volume is unbound"
        platform.apply(
            {
                "apiVersion": "v1",
                "kind": "PersistentVolume",
                "metadata": {"name": volume},
                "spec": {
                    "capacity": {"storage": "2Ti"},
                    "accessModes": ["ReadWriteMany", "ReadWriteOnce"],
                    "persistentVolumeReclaimPolicy": "Retain",
                    "storageClassName": storage_class,
                    "hostPath": {"path": f"/var/lib/kwok-models/{volume}"},
                },
            }
        )
        obj = platform.wait_phase(ns, "o", "Ready", timeout=120)
        assert reason_of(platform, obj, "WorkloadReady") == ("True", "Available")
        assert obj["status"]["resolved"]["replanCount"] == 0
    finally:
        # The order's volume names the class: the order goes before the setting changes back.
        platform.kubectl("delete", "inferenceservice", "o", "-n", ns, "--ignore-not-found", "--wait=true")
        _set_model_storage_class(platform, SETTINGS["modelStorageClass"])
        platform.kubectl("delete", "persistentvolume", volume, "--ignore-not-found", "--wait=false")


def test_workload_failed_when_the_deployment_cannot_create_pods(platform: Platform, ns: str) -> None:
    klass = platform.create_class(
        {"scaling": {"minReplicas": 1, "maxReplicas": 1, "priorityClassName": "no-such-priority"}}
    )
    platform.create_order(ns, "o", hf(SMALL), klass=klass)
    obj = platform.wait_reason(ns, "o", "WorkloadReady", "WorkloadFailed", timeout=60)
    assert "no-such-priority" in platform.condition(obj, "WorkloadReady")["message"]


# -- Ready and ScalingHealthy --------------------------------------------------------------------


def test_health_check_failed_before_the_first_ready_then_recovers(platform: Platform, ns: str) -> None:
    platform.runtime.set_fault(ns, "o", 503)
    try:
        platform.create_order(ns, "o", hf(SMALL))
        obj = platform.wait_reason(ns, "o", "Ready", "HealthCheckFailed", timeout=90)
        assert obj["status"]["phase"] == "Pending"
    finally:
        platform.runtime.clear_fault(ns, "o")
    platform.wait_phase(ns, "o", "Ready", timeout=60)


def test_service_unhealthy_after_ready_then_recovers(platform: Platform, ns: str) -> None:
    platform.create_order(ns, "o", hf(SMALL))
    platform.wait_phase(ns, "o", "Ready", timeout=90)
    platform.runtime.set_fault(ns, "o", 503)
    try:
        obj = platform.wait_reason(ns, "o", "Ready", "ServiceUnhealthy", timeout=60)
        assert obj["status"]["phase"] == "Failed"
    finally:
        platform.runtime.clear_fault(ns, "o")
    platform.wait_phase(ns, "o", "Ready", timeout=60)


def test_scale_up_blocked_makes_the_order_degraded(platform: Platform, ns: str) -> None:
    uid = free_l4_uuid(platform)
    klass = platform.create_class(
        {
            "placement": {
                "deviceClassNames": ["gpu.nvidia.com"],
                "selector": f'device.attributes["gpu.nvidia.com"].uuid == "{uid}"',
            },
            "scaling": {"minReplicas": 2, "maxReplicas": 2},
        }
    )
    platform.create_order(ns, "o", hf(SMALL), klass=klass)
    obj = platform.wait_phase(ns, "o", "Degraded", timeout=120)
    assert reason_of(platform, obj, "ScalingHealthy") == ("False", "ScaleUpBlocked")
    assert reason_of(platform, obj, "Ready") == ("True", "Serving")


def test_launch_plan_in_force_when_a_replan_of_a_serving_order_fails(platform: Platform, ns: str) -> None:
    token_secret(platform, ns)
    klass = platform.create_class(
        {
            "placement": {
                "deviceClassNames": ["gpu.nvidia.com"],
                "selector": L4,
                "maxAcceleratorsPerReplica": 1,
            }
        }
    )
    platform.create_order(ns, "o", hf(SMALL), klass=klass)
    platform.wait_phase(ns, "o", "Ready", timeout=90)
    before = platform.get("deployment", "o", ns)
    assert before is not None
    platform.create_order(
        ns, "o", hf("meta-llama/Llama-3.1-70B-Instruct", authSecretRef={"name": "hf-token"}), klass=klass
    )
    obj = platform.wait_reason(ns, "o", "Planned", "LaunchPlanInForce", timeout=60)
    assert obj["status"]["phase"] == "Ready"
    assert "NoAcceleratorWithEnoughMemory" in platform.condition(obj, "Planned")["message"]
    assert obj["status"]["resolved"]["replanCount"] == 1
    after = platform.get("deployment", "o", ns)
    assert after is not None
    assert after["spec"]["template"] == before["spec"]["template"], "the plan in force keeps serving"
