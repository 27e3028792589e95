"""The workload of a multi-node plan: a LeaderWorkerSet (``leaderworkerset.x-k8s.io/v1``). Pure.

One group of ``nodeCount`` pods per replica: the leader (worker index 0) and ``nodeCount - 1``
workers, each pod on its own node with one node's devices. ``RecreateGroupOnPodRestart``: a lost
pod restarts the whole group, since a pipeline stage cannot rejoin a running vLLM.

- **Claims**: the leader and the workers each get their own ResourceClaimTemplate (same request,
  ``devices per node`` devices of the product), so each pod gets its own claim on its own node.
- **The launch** is vLLM's documented multi-node one (0.11 has no ``--nnodes``): Ray. The leader
  runs ``multi-node-serving.sh leader --ray_cluster_size=$LWS_GROUP_SIZE`` (a Ray head that waits
  for the whole group) then ``vllm serve`` with the plan's args (``--tensor-parallel-size <per
  node> --pipeline-parallel-size <nodes> --distributed-executor-backend ray``); the workers run
  ``multi-node-serving.sh worker --ray_address=$LWS_LEADER_ADDRESS``. The script ships in the
  ``vllm/vllm-openai`` image. Both get ``--ray_init_timeout`` from ``controller.render.timing`` (600 s
  + the download at ``modelDownloadMiBPerSecond`` + 300 s, not the script's fixed 300 s: every pod
  downloads the whole checkpoint before it starts), and the leader's startupProbe allows that wait. The args stay the container's ``args`` (``"$@"`` of the shell), so they
  are the exact ``vllm serve`` flags, checked against vLLM's parser like the single-node ones.
- **The model volume** is per pod: a generic ephemeral volume of the plan's size (a ReadWriteOnce
  volume cannot be shared across nodes; each pod's fetcher downloads the checkpoint).
- **Security, probes, the API key**: those of the single-node pod (``controller.render.pod``). The
  workers serve no HTTP, so they have no HTTP probes: a worker whose Ray process dies exits, and
  LWS restarts the group.
- **Ray's exposure** (``controller.render.ray``): a NetworkPolicy per group admits Ray's ports from
  the group's own pods only, and Ray's token authentication is on where the image's Ray has it.
- ``replicas`` is the class's ``minReplicas`` (no autoscaler for multi-node groups).
"""

from __future__ import annotations

from controller.config.settings import Settings
from controller.render import timing
from controller.render.claim import claim_devices, claim_template_name
from controller.render.common import PLAN_ANNOTATION, Obj, PlanView, labels, meta, template_annotations
from controller.render.exposure import replica_bounds, requires_token
from controller.render.fetch import FetchSpec
from controller.render.pod import TOKEN_GUARD_CONTAINER, pod_spec
from controller.render.ray import auth_env, network_policies
from shared import names
from shared.api.inference_class import InferenceServiceClassSpec
from shared.api.order import InferenceService
from shared.quantity import parse_bytes

API_VERSION = "leaderworkerset.x-k8s.io/v1"
KIND = "LeaderWorkerSet"
WORKER_INDEX_LABEL = "leaderworkerset.sigs.k8s.io/worker-index"
ROLE_LABEL = "ai.deckhouse.io/role"
RAY_SCRIPT = "/vllm-workspace/examples/online_serving/multi-node-serving.sh"


def leader_script(ray_init_timeout: int) -> str:
    """The leader's shell: a Ray head that waits up to ``ray_init_timeout`` s for the whole group,
    then ``vllm serve`` with the container's args."""
    return (
        f'bash {RAY_SCRIPT} leader --ray_cluster_size="$LWS_GROUP_SIZE" '
        f'--ray_init_timeout={ray_init_timeout} && exec vllm serve "$@"'
    )


def worker_script(ray_init_timeout: int) -> str:
    """A worker's shell: join the leader's Ray head, retrying for up to ``ray_init_timeout`` s."""
    return (
        f'exec bash {RAY_SCRIPT} worker --ray_address="$LWS_LEADER_ADDRESS" '
        f"--ray_init_timeout={ray_init_timeout}"
    )


def group_name_of(order: str) -> str:
    """``<order>-group``: LWS names its headless Service after the set, and ``<order>`` is ours."""
    return f"{names.workload(order)}-group"


def group_name(order: InferenceService) -> str:
    return group_name_of(order.metadata.name)


def worker_claim_template_name(order: InferenceService, plan: PlanView) -> str:
    return claim_template_name(order, plan).replace(
        names.claim_template(order.metadata.name), f"{names.claim_template(order.metadata.name)}-worker", 1
    )


def claim_templates(order: InferenceService, plan: PlanView) -> list[Obj]:
    """The leader's template (named as a single-node plan's) and the workers'."""
    out = []
    for name in (claim_template_name(order, plan), worker_claim_template_name(order, plan)):
        out.append(
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceClaimTemplate",
                "metadata": meta(order, name),
                "spec": {"metadata": {"labels": labels(order)}, "spec": {"devices": claim_devices(plan)}},
            }
        )
    return out


def _model_volume(plan: PlanView, settings: Settings) -> Obj:
    spec: Obj = {
        "accessModes": ["ReadWriteOnce"],
        "resources": {"requests": {"storage": plan.model_volume}},
    }
    if settings.model_storage_class:
        spec["storageClassName"] = settings.model_storage_class
    return {"name": "model", "ephemeral": {"volumeClaimTemplate": {"spec": spec}}}


def _pod(
    order: InferenceService,
    plan: PlanView,
    spec: InferenceServiceClassSpec,
    settings: Settings,
    *,
    revision: str | None,
    leader: bool,
    fetch: FetchSpec | None,
) -> Obj:
    token = requires_token(spec)
    pod = pod_spec(order, plan, spec, settings, volume_name="", revision=revision, token=token, fetch=fetch)
    pod["volumes"] = [_model_volume(plan, settings) if v["name"] == "model" else v for v in pod["volumes"]]
    (runtime,) = pod["containers"]
    if token:
        runtime["env"] = [*runtime["env"], *auth_env(order)]
    weights = parse_bytes(plan.model_volume)
    wait = timing.ray_init_timeout(weights, settings)
    if leader:
        runtime["command"] = ["/bin/bash", "-c", leader_script(wait), "vllm"]
        runtime["startupProbe"] = timing.leader_startup_probe(weights, settings)
    else:
        runtime["command"] = ["/bin/bash", "-c", worker_script(wait)]
        runtime["args"] = []
        # a worker serves no HTTP: no token guard to write or load
        pod["initContainers"] = [c for c in pod["initContainers"] if c["name"] != TOKEN_GUARD_CONTAINER]
        runtime["env"] = [e for e in runtime["env"] if e["name"] != "PYTHONPATH"]
        for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
            runtime.pop(probe, None)
        runtime.pop("ports", None)
        pod["resourceClaims"] = [
            {"name": names.CLAIM_NAME, "resourceClaimTemplateName": worker_claim_template_name(order, plan)}
        ]
    return pod


def _template(order: InferenceService, pod: Obj, plan_hash: str, role: str, token_hash: str | None) -> Obj:
    return {
        "metadata": {
            "labels": {**labels(order), ROLE_LABEL: role},
            "annotations": template_annotations(plan_hash, token_hash),
        },
        "spec": pod,
    }


def group_count(spec: InferenceServiceClassSpec) -> int:
    """The groups a multi-node plan runs: the class's ``minReplicas``, at least 1. A LeaderWorkerSet
    has no autoscaler, so a class with ``minReplicas: 0`` runs one group and never scales to zero."""
    return max(replica_bounds(spec)[0], 1)


def leader_worker_set(
    order: InferenceService,
    plan: PlanView,
    spec: InferenceServiceClassSpec,
    settings: Settings,
    *,
    revision: str | None,
    fetch: FetchSpec | None = None,
    token_hash: str | None = None,
) -> Obj:
    plan_json = plan.model_dump_json()
    plan_hash = names.short_hash(plan_json, 16)
    lo = group_count(spec)
    leader = _pod(order, plan, spec, settings, revision=revision, leader=True, fetch=fetch)
    worker = _pod(order, plan, spec, settings, revision=revision, leader=False, fetch=fetch)
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": meta(order, group_name(order), annotations={PLAN_ANNOTATION: plan_json}),
        "spec": {
            "replicas": lo,
            "startupPolicy": "LeaderCreated",
            "leaderWorkerTemplate": {
                "size": plan.node_count,
                "restartPolicy": "RecreateGroupOnPodRestart",
                "leaderTemplate": _template(order, leader, plan_hash, "leader", token_hash),
                "workerTemplate": _template(order, worker, plan_hash, "worker", token_hash),
            },
        },
    }


def group_network_policies(order: InferenceService, spec: InferenceServiceClassSpec) -> list[Obj]:
    """The NetworkPolicy of each group the set runs (``controller.render.ray``)."""
    lo = group_count(spec)
    return network_policies(order, group_name(order), lo)
