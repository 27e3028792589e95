"""The runtime pod: the model-fetcher init container, the runtime container, their volumes, security
and scheduling. Pure.

- **Pod Security ``restricted``**: the pod runs as a non-root UID with ``seccompProfile:
  RuntimeDefault``; each container drops ALL capabilities and cannot escalate. The runtime images
  (``vllm/vllm-openai``) default to root, so the UID is set explicitly, ``fsGroup`` makes the model
  volume writable for the fetcher, and ``HOME`` points at a scratch ``emptyDir`` (caches of the
  Hub client, vLLM and torch.compile).
- **The API key** reaches vLLM as ``VLLM_API_KEY`` from the ``<order>-auth`` Secret, never as an
  argument (vLLM logs its non-default arguments at start).
- **The token guard**: vLLM itself checks the key only under ``/v1``, ``/v2``, ``/inference`` and
  ``/cohere``; ``/invocations``, ``/tokenize`` and ``/metrics`` answer without it. For an order with
  a token, the ``token-guard`` init container writes ``controller/render/token_guard.py`` into the
  ``home`` volume as ``inference_token_guard.py``, and the runtime loads it with ``--middleware
  inference_token_guard.TokenGuard`` (``PYTHONPATH`` names the directory): every route but ``GET
  /health`` then needs the token, whichever way a client comes in (the Service, the Ingress).
  Prometheus scrapes ``/metrics`` with the same Bearer token (docs/admin-guide.md).
- **``/dev/shm``**: a memory-backed ``emptyDir``. Tensor parallel moves activations between the
  devices through it (NCCL); vLLM's own processes exchange messages through it as well, so even one
  device gets more than the container runtime's 64 MiB. Its pages count against the pod's memory
  limit, which the planner sizes with 2 GiB per device; this takes half of that.
- **Scheduling**: the module's GPU node tolerations and selector, plus the class's.
- **The fetcher** runs ``hf download`` (``controller.render.fetch``) under a progress wrapper,
  ``python3 -c <controller/render/fetcher_program.py> hf download ...``, which serves the bytes on
  disk as a metric on ``FETCHER_METRICS_PORT`` while it runs (the controller scrapes it into the
  WorkloadReady message). The program travels in the command rather than in a ConfigMap: no
  further owned object, RBAC or mount, and a change of the program rolls the pods like any other
  change of the pod template. (Its source is read once from the package, like a constant.)
"""

from __future__ import annotations

import functools
from importlib import resources

from controller.config.settings import Settings
from controller.render import timing
from controller.render.claim import claim_template_name
from controller.render.common import Obj, PlanView
from controller.render.fetch import FetchSpec, download_args
from shared import names
from shared.api.inference_class import InferenceServiceClassSpec
from shared.api.order import InferenceService
from shared.api.scheduling import Toleration
from shared.quantity import GIB, parse_bytes, to_quantity_gi

RUNTIME_UID = 1000  # any non-root UID; the images do not need a named user
HOME_PATH = "/home/inference"
SHM_PER_DEVICE = GIB
TOKEN_GUARD_CONTAINER = "token-guard"
TOKEN_GUARD_DIR = f"{HOME_PATH}/.token-guard"
TOKEN_GUARD_MODULE = "inference_token_guard"
TOKEN_GUARD_MIDDLEWARE = f"{TOKEN_GUARD_MODULE}.TokenGuard"
_WRITE_FILE = (
    "import pathlib, sys; p = pathlib.Path(sys.argv[1]); p.parent.mkdir(parents=True, exist_ok=True); "
    "p.write_text(sys.argv[2], encoding='utf-8')"
)


def shm_size(plan: PlanView) -> str:
    """``/dev/shm`` of the runtime: 1 GiB per device of the pod (1 GiB for one device)."""
    return to_quantity_gi(SHM_PER_DEVICE * max(1, plan.devices_per_pod))


def container_security() -> Obj:
    return {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "runAsNonRoot": True,
        "seccompProfile": {"type": "RuntimeDefault"},
    }


def pod_security() -> Obj:
    return {
        "runAsNonRoot": True,
        "runAsUser": RUNTIME_UID,
        "runAsGroup": RUNTIME_UID,
        "fsGroup": RUNTIME_UID,
        "fsGroupChangePolicy": "OnRootMismatch",
        "seccompProfile": {"type": "RuntimeDefault"},
    }


def tolerations(spec: InferenceServiceClassSpec, settings: Settings) -> list[Obj]:
    """The module's GPU node tolerations, then the class's that are not among them."""
    out: list[Obj] = []
    for t in (*settings.gpu_node_tolerations, *(spec.placement.tolerations or ())):
        wire = _toleration(t)
        if wire not in out:
            out.append(wire)
    return out


def _toleration(t: Toleration) -> Obj:
    return t.to_wire()


def node_selector(spec: InferenceServiceClassSpec, settings: Settings) -> dict[str, str]:
    """The module's GPU node selector with the class's on top (the class may narrow it)."""
    return {**settings.gpu_node_selector, **(spec.placement.node_selector or {})}


@functools.cache
def fetcher_program() -> str:
    """The source of ``controller/render/fetcher_program.py``, the fetcher's progress wrapper."""
    return resources.files("controller.render").joinpath("fetcher_program.py").read_text(encoding="utf-8")


@functools.cache
def token_guard_program() -> str:
    """The source of ``controller/render/token_guard.py``, the runtime's token guard."""
    return resources.files("controller.render").joinpath("token_guard.py").read_text(encoding="utf-8")


def token_guard(plan: PlanView) -> Obj:
    """The init container that writes the token guard into the ``home`` volume (runtime's image:
    it has the ``python3`` the runtime will import the guard with)."""
    return {
        "name": TOKEN_GUARD_CONTAINER,
        "image": plan.image,
        "command": ["python3", "-c", _WRITE_FILE],
        "args": [f"{TOKEN_GUARD_DIR}/{TOKEN_GUARD_MODULE}.py", token_guard_program()],
        "volumeMounts": [{"name": "home", "mountPath": HOME_PATH}],
        "securityContext": container_security(),
    }


def fetcher(
    order: InferenceService,
    plan: PlanView,
    settings: Settings,
    revision: str | None,
    fetch: FetchSpec | None = None,
) -> Obj:
    """The init container that downloads the model's runtime files (``controller.render.fetch``)."""
    model = order.spec.model
    spec = fetch or FetchSpec(repo=model.ref.name, revision=revision, include=())
    env: list[Obj] = [
        {"name": "HF_ENDPOINT", "value": settings.hf_endpoint},
        {"name": "HF_HUB_DISABLE_TELEMETRY", "value": "1"},
        {"name": "HOME", "value": HOME_PATH},
        {"name": "MODEL_FETCHER_METRICS_PORT", "value": str(names.FETCHER_METRICS_PORT)},
        {"name": "MODEL_FETCHER_BYTES_TOTAL", "value": str(spec.total_bytes or 0)},
    ]
    if model.auth_secret_ref is not None:
        key = model.auth_secret_ref.key or names.DEFAULT_HF_TOKEN_KEY
        env.append(
            {
                "name": "HF_TOKEN",
                "valueFrom": {"secretKeyRef": {"name": model.auth_secret_ref.name, "key": key}},
            }
        )
    args = download_args(spec, f"{names.MODEL_MOUNT_PATH}/model")
    return {
        "name": names.FETCHER_CONTAINER,
        "image": settings.model_fetcher_image or plan.image,
        "command": ["python3", "-c", fetcher_program(), "hf"],
        "args": args,
        "env": env,
        "ports": [{"name": "fetch-metrics", "containerPort": names.FETCHER_METRICS_PORT, "protocol": "TCP"}],
        "volumeMounts": [
            {"name": "model", "mountPath": names.MODEL_MOUNT_PATH},
            {"name": "home", "mountPath": HOME_PATH},
        ],
        "securityContext": container_security(),
    }


WATCHFILES_FORCE_POLLING_ENV = "WATCHFILES_FORCE_POLLING"
"""Makes ``--enable-ssl-refresh`` (watchfiles) poll ``tls.crt``/``tls.key`` by path instead of watching
them with inotify. In the Secret volume both are links through ``..data`` into a timestamped directory
the kubelet swaps and deletes on each renewal; an inotify watch is on the old file's inode, ends with
it at the first renewal and is never renewed, so vLLM would load only that one. The poller stats the
paths (through the links) every 300 ms and reports a newer mtime (whole seconds) each time."""


def runtime(order: InferenceService, plan: PlanView, settings: Settings, *, token: bool) -> Obj:
    env: list[Obj] = []
    if token:
        env.append(
            {
                "name": names.API_KEY_ENV,
                "valueFrom": {
                    "secretKeyRef": {
                        "name": names.auth_secret(order.metadata.name),
                        "key": names.AUTH_TOKEN_KEY,
                    }
                },
            }
        )
    env += [
        {"name": "HOME", "value": HOME_PATH},
        {"name": "VLLM_NO_USAGE_STATS", "value": "1"},
        {"name": WATCHFILES_FORCE_POLLING_ENV, "value": "true"},
    ]
    args = list(plan.args)
    if token:
        env.append({"name": "PYTHONPATH", "value": TOKEN_GUARD_DIR})
        args += ["--middleware", TOKEN_GUARD_MIDDLEWARE]
        if settings.metrics_scrape_token_sha256:
            # the digest only (tenants read their pod specs): the guard admits its token on GET /metrics
            env.append({"name": names.SCRAPE_DIGEST_ENV, "value": settings.metrics_scrape_token_sha256})
    weights = parse_bytes(plan.model_volume)
    return {
        "name": "runtime",
        "image": plan.image,
        "args": args,
        "env": env,
        "ports": [{"name": "https", "containerPort": names.RUNTIME_PORT, "protocol": "TCP"}],
        "resources": {
            "requests": {"cpu": plan.cpu, "memory": plan.memory},
            "limits": {"memory": plan.memory},
            "claims": [{"name": names.CLAIM_NAME}],
        },
        "startupProbe": timing.startup_probe(weights, settings),
        "livenessProbe": timing.liveness_probe(),
        "readinessProbe": timing.readiness_probe(),
        "volumeMounts": [
            {"name": "model", "mountPath": names.MODEL_MOUNT_PATH, "readOnly": True},
            {"name": "tls", "mountPath": names.TLS_MOUNT_PATH, "readOnly": True},
            {"name": "shm", "mountPath": "/dev/shm"},
            {"name": "home", "mountPath": HOME_PATH},
        ],
        "securityContext": container_security(),
    }


def pod_spec(
    order: InferenceService,
    plan: PlanView,
    spec: InferenceServiceClassSpec,
    settings: Settings,
    *,
    volume_name: str,
    revision: str | None,
    token: bool,
    fetch: FetchSpec | None = None,
) -> Obj:
    out: Obj = {
        # the runtime never calls the API server: no ServiceAccount token in a pod tenants reach
        "automountServiceAccountToken": False,
        "securityContext": pod_security(),
        "initContainers": [
            *([token_guard(plan)] if token else []),
            fetcher(order, plan, settings, revision, fetch),
        ],
        "containers": [runtime(order, plan, settings, token=token)],
        "resourceClaims": [
            {"name": names.CLAIM_NAME, "resourceClaimTemplateName": claim_template_name(order, plan)}
        ],
        "volumes": [
            {"name": "model", "persistentVolumeClaim": {"claimName": volume_name}},
            {"name": "tls", "secret": {"secretName": names.tls_secret(order.metadata.name)}},
            {"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": shm_size(plan)}},
            {"name": "home", "emptyDir": {}},
        ],
    }
    if spec.scaling is not None and spec.scaling.priority_class_name:
        out["priorityClassName"] = spec.scaling.priority_class_name
    selector = node_selector(spec, settings)
    if selector:
        out["nodeSelector"] = selector
    tols = tolerations(spec, settings)
    if tols:
        out["tolerations"] = tols
    return out
