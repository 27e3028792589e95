"""The runtime pod: Pod Security restricted, the API key from the environment, /dev/shm, probes
sized from the weights, GPU node scheduling, and the rollout the model volume allows."""

from __future__ import annotations

from typing import Any

import pytest

from controller import render
from controller.config.settings import Settings, parse_settings
from controller.render import timing
from controller.render.pod import shm_size
from shared.quantity import GIB
from tests.unit.controller.builders import make_class, make_order
from tests.unit.controller.test_render import SETTINGS, Plan


def pod_of(plan: Plan | None = None, settings: Settings = SETTINGS, **klass: Any) -> dict[str, Any]:
    dep = render.deployment(
        make_order(), plan or Plan(), make_class(spec=klass).spec, settings, revision="abc"
    )
    pod: dict[str, Any] = dep["spec"]["template"]["spec"]
    return pod


def container(pod: dict[str, Any], name: str) -> dict[str, Any]:
    by_name: dict[str, dict[str, Any]] = {c["name"]: c for c in pod["containers"] + pod["initContainers"]}
    return by_name[name]


def test_every_container_meets_pod_security_restricted() -> None:
    pod = pod_of()
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] != 0
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    for c in pod["containers"] + pod["initContainers"]:
        sc = c["securityContext"]
        assert sc["allowPrivilegeEscalation"] is False, c["name"]
        assert sc["capabilities"] == {"drop": ["ALL"]}, c["name"]
        assert sc["runAsNonRoot"] is True, c["name"]
        assert sc["seccompProfile"] == {"type": "RuntimeDefault"}, c["name"]
    assert not any("hostPath" in v for v in pod["volumes"])


def test_the_api_key_reaches_vllm_as_vllm_api_key_from_the_auth_secret_and_never_as_an_argument() -> None:
    runtime = container(pod_of(), "runtime")
    env = {e["name"]: e for e in runtime["env"]}
    assert env["VLLM_API_KEY"]["valueFrom"]["secretKeyRef"] == {"name": "support-llm-auth", "key": "token"}
    assert not any("api-key" in a or "VLLM_API_KEY" in a for a in runtime["args"])


def test_the_certificate_refresh_polls_the_secret_volumes_paths() -> None:
    """vLLM's ``--enable-ssl-refresh`` (watchfiles) follows every renewal only by polling: an inotify
    watch ends with the first timestamped directory the kubelet deletes (pod.py). The volume is the
    whole Secret at a directory (a subPath mount would never be updated)."""
    pod = pod_of()
    runtime = container(pod, "runtime")
    env = {e["name"]: e.get("value") for e in runtime["env"]}
    assert env["WATCHFILES_FORCE_POLLING"] == "true"
    (tls,) = [m for m in runtime["volumeMounts"] if m["name"] == "tls"]
    assert "subPath" not in tls


@pytest.mark.parametrize(("devices", "size"), [(1, "1Gi"), (2, "2Gi"), (8, "8Gi")])
def test_dev_shm_is_memory_backed_and_grows_with_tensor_parallel(devices: int, size: str) -> None:
    pod = pod_of(Plan(accelerator_count=devices))
    shm = next(v for v in pod["volumes"] if v["name"] == "shm")
    assert shm["emptyDir"] == {"medium": "Memory", "sizeLimit": size}
    mounts = {m["name"]: m["mountPath"] for m in container(pod, "runtime")["volumeMounts"]}
    assert mounts["shm"] == "/dev/shm"


def test_dev_shm_fits_in_the_memory_the_planner_adds_per_device() -> None:
    for devices in (1, 2, 4, 8):
        shm = shm_size(Plan(accelerator_count=devices))
        assert int(shm.removesuffix("Gi")) * GIB <= 2 * GIB * devices


def test_a_70b_model_gets_a_startup_budget_and_progress_deadline_beyond_its_load() -> None:
    small = pod_of(Plan(model_volume="17Gi"))
    big_dep = render.deployment(
        make_order(), Plan(model_volume="145Gi"), make_class().spec, SETTINGS, revision=None
    )
    big = big_dep["spec"]["template"]["spec"]
    startup = container(big, "runtime")["startupProbe"]
    load = timing.load_seconds(145 * GIB, SETTINGS)
    assert startup["periodSeconds"] * startup["failureThreshold"] >= 2 * load
    assert load > 145 * GIB / (SETTINGS.model_load_mib_per_second * 2**20)
    small_startup = container(small, "runtime")["startupProbe"]
    assert small_startup["failureThreshold"] < startup["failureThreshold"]
    deadline = big_dep["spec"]["progressDeadlineSeconds"]
    assert deadline >= timing.download_seconds(145 * GIB, SETTINGS) + 2 * load
    assert deadline > 600, "longer than the Deployment default, so a 70B load is not a WorkloadFailed"


def test_liveness_and_readiness_probe_the_health_route_over_https() -> None:
    runtime = container(pod_of(), "runtime")
    for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
        get = runtime[probe]["httpGet"]
        assert (get["path"], get["scheme"], get["port"]) == ("/health", "HTTPS", 8443)


def test_module_and_class_tolerations_and_node_selectors_land_on_the_pod() -> None:
    settings = parse_settings(
        {
            "gpuNodeTolerations": '[{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]',
            "gpuNodeSelector": '{"nvidia.com/gpu.present": "true", "pool": "any"}',
        },
        {},
    )
    pod = pod_of(
        settings=settings,
        placement={
            "tolerations": [
                {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
                {"key": "dedicated", "operator": "Equal", "value": "llm", "effect": "NoSchedule"},
            ],
            "nodeSelector": {"pool": "h100"},
        },
    )
    assert pod["tolerations"] == [
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
        {"key": "dedicated", "operator": "Equal", "value": "llm", "effect": "NoSchedule"},
    ]
    assert pod["nodeSelector"] == {"nvidia.com/gpu.present": "true", "pool": "h100"}


def test_without_scheduling_settings_the_pod_has_no_tolerations_or_selector() -> None:
    pod = pod_of()
    assert "tolerations" not in pod and "nodeSelector" not in pod


@pytest.mark.parametrize(
    ("mode", "strategy"),
    [("ReadWriteOnce", "Recreate"), ("ReadWriteOncePod", "Recreate"), ("ReadWriteMany", "RollingUpdate")],
)
def test_the_volume_access_mode_comes_from_settings_and_decides_the_rollout(mode: str, strategy: str) -> None:
    settings = parse_settings({"modelVolumeAccessMode": mode, "modelStorageClass": "fast"}, {})
    objs = {
        o["kind"]: o
        for o in render.workload(make_order(), Plan(), make_class().spec, settings, revision=None)
    }
    assert objs["PersistentVolumeClaim"]["spec"]["accessModes"] == [mode]
    assert objs["PersistentVolumeClaim"]["spec"]["storageClassName"] == "fast"
    assert objs["Deployment"]["spec"]["strategy"]["type"] == strategy


def test_the_default_access_mode_is_read_write_once_which_every_block_storage_has() -> None:
    assert Settings().model_volume_access_mode == "ReadWriteOnce"
    pvc = render.model_volume(make_order(), Plan(), Settings())
    assert pvc["spec"]["accessModes"] == ["ReadWriteOnce"]


def test_the_certificate_sets_its_lifetime_and_renewal() -> None:
    order = make_order()
    cert = render.certificate(order, render.endpoint_for(order, make_class().spec, SETTINGS), SETTINGS)
    assert (cert["spec"]["duration"], cert["spec"]["renewBefore"]) == ("2160h", "720h")


def test_no_runtime_pod_mounts_a_service_account_token() -> None:
    """The Deployment's pod and the LeaderWorkerSet's leader and worker pods (issue 21, item 12)."""
    from tests.unit.controller.test_render_group import objects

    assert pod_of()["automountServiceAccountToken"] is False
    lws = next(o for (k, _), o in objects().items() if k == "LeaderWorkerSet")
    tpl = lws["spec"]["leaderWorkerTemplate"]
    for role in ("leaderTemplate", "workerTemplate"):
        assert tpl[role]["spec"]["automountServiceAccountToken"] is False, role
