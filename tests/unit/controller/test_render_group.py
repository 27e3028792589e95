"""The workload of a multi-node plan: a LeaderWorkerSet owned by the order, and nothing single-node."""

from __future__ import annotations

from typing import Any

from controller import render
from controller.render import timing
from controller.render.group import leader_script, worker_script
from shared import names
from shared.quantity import parse_bytes
from tests.unit.controller.builders import make_class, make_order
from tests.unit.controller.test_render import SETTINGS, Plan

ARGS = ["--model", "/models/model", "--tensor-parallel-size", "8", "--pipeline-parallel-size", "2"]
PLAN = Plan(accelerator_count=16, node_count=2, args=ARGS, cpu="18", memory="115Gi", model_volume="833Gi")


def objects() -> dict[tuple[str, str], dict[str, Any]]:
    objs = render.workload(make_order(), PLAN, make_class().spec, SETTINGS, revision="abc")
    return {(o["kind"], o["metadata"]["name"]): o for o in objs}


def test_a_multinode_plan_is_a_leader_worker_set_with_no_deployment_hpa_or_shared_volume() -> None:
    objs = objects()
    kinds = sorted(k for k, _ in objs)
    assert "Deployment" not in kinds and "HorizontalPodAutoscaler" not in kinds
    assert "ScaledObject" not in kinds, "a multi-node plan runs minReplicas groups, no autoscaler"
    assert "PersistentVolumeClaim" not in kinds
    assert kinds.count("ResourceClaimTemplate") == 2
    order = make_order()
    lws = objs[("LeaderWorkerSet", f"{order.metadata.name}-group")]
    assert lws["apiVersion"] == "leaderworkerset.x-k8s.io/v1"
    (ref,) = lws["metadata"]["ownerReferences"]
    assert ref["kind"] == "InferenceService" and ref["controller"] is True
    assert render.PLAN_ANNOTATION in lws["metadata"]["annotations"]
    tpl = lws["spec"]["leaderWorkerTemplate"]
    assert tpl["size"] == 2
    assert tpl["restartPolicy"] == "RecreateGroupOnPodRestart"
    assert lws["spec"]["replicas"] == 1


def test_leader_and_workers_each_claim_one_nodes_devices_from_their_own_template() -> None:
    objs = objects()
    templates = {n: o for (k, n), o in objs.items() if k == "ResourceClaimTemplate"}
    for t in templates.values():
        (request,) = t["spec"]["spec"]["devices"]["requests"]
        assert request["exactly"]["count"] == 8  # one node's share of 16
    lws = next(o for (k, _), o in objs.items() if k == "LeaderWorkerSet")
    tpl = lws["spec"]["leaderWorkerTemplate"]
    leader = tpl["leaderTemplate"]["spec"]["resourceClaims"][0]["resourceClaimTemplateName"]
    worker = tpl["workerTemplate"]["spec"]["resourceClaims"][0]["resourceClaimTemplateName"]
    assert leader != worker and {leader, worker} == set(templates)
    assert leader == render.claim_template_name(make_order(), PLAN)


def test_the_leader_serves_vllm_on_ray_and_the_workers_join_its_ray_head() -> None:
    lws = next(o for (k, _), o in objects().items() if k == "LeaderWorkerSet")
    tpl = lws["spec"]["leaderWorkerTemplate"]
    (leader,) = tpl["leaderTemplate"]["spec"]["containers"]
    (worker,) = tpl["workerTemplate"]["spec"]["containers"]
    wait = timing.ray_init_timeout(parse_bytes(PLAN.model_volume), SETTINGS)
    assert leader["command"] == ["/bin/bash", "-c", leader_script(wait), "vllm"]
    # the exact vllm serve flags, as "$@", and the token guard (the leader serves the API)
    assert leader["args"] == [*ARGS, "--middleware", "inference_token_guard.TokenGuard"]
    leader_init = [c["name"] for c in tpl["leaderTemplate"]["spec"]["initContainers"]]
    worker_init = [c["name"] for c in tpl["workerTemplate"]["spec"]["initContainers"]]
    assert (leader_init, worker_init) == (["token-guard", "model-fetcher"], ["model-fetcher"])
    assert "PYTHONPATH" not in {e["name"] for e in worker["env"]}
    assert "$LWS_GROUP_SIZE" in leader_script(wait) and 'exec vllm serve "$@"' in leader_script(wait)
    assert worker["command"] == ["/bin/bash", "-c", worker_script(wait)]
    assert "$LWS_LEADER_ADDRESS" in worker_script(wait)
    assert "readinessProbe" in leader and "startupProbe" in leader
    assert "readinessProbe" not in worker  # workers serve no HTTP
    for pod in (tpl["leaderTemplate"]["spec"], tpl["workerTemplate"]["spec"]):
        assert pod["securityContext"]["runAsNonRoot"] is True
        (container,) = pod["containers"]
        assert container["securityContext"]["capabilities"] == {"drop": ["ALL"]}
        assert container["env"][0]["name"] == "VLLM_API_KEY"
        volumes = {v["name"]: v for v in pod["volumes"]}
        assert volumes["shm"]["emptyDir"] == {"medium": "Memory", "sizeLimit": "8Gi"}
        claim = volumes["model"]["ephemeral"]["volumeClaimTemplate"]["spec"]
        assert claim["resources"]["requests"]["storage"] == "833Gi"
        assert claim["storageClassName"] == "models"


def test_a_group_of_a_class_without_auth_carries_no_api_key() -> None:
    spec = make_class(spec={"exposure": {"authentication": "None"}}).spec
    objs = render.workload(make_order(), PLAN, spec, SETTINGS, revision="abc")
    lws = next(o for o in objs if o["kind"] == "LeaderWorkerSet")
    tpl = lws["spec"]["leaderWorkerTemplate"]
    for pod in (tpl["leaderTemplate"]["spec"], tpl["workerTemplate"]["spec"]):
        (container,) = pod["containers"]
        assert names.API_KEY_ENV not in {e["name"] for e in container.get("env", [])}


def test_the_service_selects_the_leader_only() -> None:
    order = make_order()
    svc = objects()[("Service", order.metadata.name)]
    assert svc["spec"]["selector"] == {
        names.LABEL_ORDER: order.metadata.name,
        "leaderworkerset.sigs.k8s.io/worker-index": "0",
    }


def ray_wait(container: dict[str, Any]) -> int:
    script = container["command"][2]
    (arg,) = [a for a in script.split() if a.startswith("--ray_init_timeout=")]
    return int(arg.split("=", 1)[1])


def test_the_group_waits_on_ray_for_the_slowest_download_not_vllms_fixed_300_s() -> None:
    """833 GiB per pod (Llama 3.1 405B) at modelDownloadMiBPerSecond: 600 s + the download + 300 s, for the
    leader (waiting for its workers) and the workers (retrying the leader's head); the leader's
    startupProbe allows that wait and then twice the load."""
    assert SETTINGS.model_download_mib_per_second > 0
    download = -(-833 * 1024 // SETTINGS.model_download_mib_per_second)  # seconds, rounded up
    expected = int(600 + download + 300)
    lws = next(o for (k, _), o in objects().items() if k == "LeaderWorkerSet")
    tpl = lws["spec"]["leaderWorkerTemplate"]
    (leader,) = tpl["leaderTemplate"]["spec"]["containers"]
    (worker,) = tpl["workerTemplate"]["spec"]["containers"]
    assert ray_wait(leader) == ray_wait(worker) == expected
    assert expected > 300 * 10  # hours of download, not vLLM's default 5 minutes
    probe = leader["startupProbe"]
    allowed = probe["periodSeconds"] * probe["failureThreshold"]
    load = timing.load_seconds(parse_bytes(PLAN.model_volume), SETTINGS)
    assert expected + 2 * load <= allowed < expected + 2 * load + probe["periodSeconds"]


def test_a_faster_download_setting_shortens_the_ray_wait() -> None:
    fast = SETTINGS.model_copy(update={"model_download_mib_per_second": 1000.0})
    objs = render.workload(make_order(), PLAN, make_class().spec, fast, revision="abc")
    lws = next(o for o in objs if o["kind"] == "LeaderWorkerSet")
    (leader,) = lws["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"]
    assert ray_wait(leader) == 600 + -(-833 * 1024 // 1000) + 300
