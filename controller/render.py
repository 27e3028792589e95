"""The manifests of the order workload (api.md section 4). Pure: plan in, dicts out.

Every object is named after the order and carries a controller ownerReference to it, so deleting
the order deletes them through the garbage collector. All are applied with server-side apply under
one field manager; nothing here reads the cluster.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Protocol

from controller.settings import Settings
from shared import names
from shared.api.base import GROUP_VERSION
from shared.api.inference_class import InferenceServiceClassSpec
from shared.api.order import InferenceService

Obj = dict[str, Any]
PLAN_ANNOTATION = "ai.deckhouse.io/launch-plan"


class PlanView(Protocol):
    """What the renderer reads of a launch plan (controller.planner.LaunchPlan satisfies it)."""

    @property
    def device_class(self) -> str: ...
    @property
    def device_selectors(self) -> list[str]: ...
    @property
    def accelerator_count(self) -> int: ...
    @property
    def capacity_requests(self) -> dict[str, str] | None: ...
    @property
    def image(self) -> str: ...
    @property
    def args(self) -> list[str]: ...
    @property
    def cpu(self) -> str: ...
    @property
    def memory(self) -> str: ...
    @property
    def model_volume(self) -> str: ...
    def model_dump_json(self) -> str: ...


@dataclass(frozen=True, slots=True)
class Endpoint:
    url: str
    type: str
    host: str


def endpoint_for(order: InferenceService, spec: InferenceServiceClassSpec, settings: Settings) -> Endpoint:
    """The HTTPS endpoint: the Service's cluster name, or the external host from the template."""
    name, ns = order.metadata.name, order.metadata.namespace or "default"
    exposure = spec.exposure
    if exposure is not None and exposure.type == "External":
        host = settings.external_domain_template.format(name=name, namespace=ns)
        return Endpoint(url=f"https://{host}", type="External", host=host)
    host = f"{name}.{ns}.svc"
    return Endpoint(url=f"https://{host}", type="ClusterLocal", host=host)


def requires_token(spec: InferenceServiceClassSpec) -> bool:
    return spec.exposure is None or spec.exposure.authentication == "Token"


def owner_reference(order: InferenceService) -> Obj:
    return {
        "apiVersion": GROUP_VERSION,
        "kind": "InferenceService",
        "name": order.metadata.name,
        "uid": order.metadata.uid or "",
        "controller": True,
        "blockOwnerDeletion": True,
    }


def _meta(order: InferenceService, name: str, *, annotations: dict[str, str] | None = None) -> Obj:
    meta: Obj = {
        "name": name,
        "namespace": order.metadata.namespace,
        "labels": labels(order),
        "ownerReferences": [owner_reference(order)],
    }
    if annotations:
        meta["annotations"] = annotations
    return meta


def labels(order: InferenceService) -> dict[str, str]:
    return {
        names.LABEL_ORDER: order.metadata.name,
        names.LABEL_MANAGED_BY: names.MANAGED_BY,
        "app.kubernetes.io/name": "inference",
        "app.kubernetes.io/instance": order.metadata.name,
    }


def claim_template_name(order: InferenceService, plan: PlanView) -> str:
    """ResourceClaimTemplate specs are immutable, so a new plan gets a new template name."""
    return f"{names.claim_template(order.metadata.name)}-{names.short_hash(json.dumps(claim_request(plan)))}"


def claim_request(plan: PlanView) -> Obj:
    exactly: Obj = {
        "deviceClassName": plan.device_class,
        "allocationMode": "ExactCount",
        "count": plan.accelerator_count,
    }
    if plan.device_selectors:
        exactly["selectors"] = [{"cel": {"expression": e}} for e in plan.device_selectors]
    if plan.capacity_requests:
        exactly["capacity"] = {"requests": dict(plan.capacity_requests)}
    return {"name": names.CLAIM_NAME, "exactly": exactly}


def resource_claim_template(order: InferenceService, plan: PlanView) -> Obj:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": _meta(order, claim_template_name(order, plan)),
        "spec": {
            "metadata": {"labels": labels(order)},
            "spec": {"devices": {"requests": [claim_request(plan)]}},
        },
    }


def model_volume_name(order: InferenceService, plan: PlanView, revision: str | None) -> str:
    """``<order>-model-<hash>``: a new model or size gets a new volume. Volumes cannot shrink and most
    cannot grow, and a new model needs its weights fetched afresh anyway; the old volume is deleted
    once the Deployment no longer mounts it."""
    key = f"{order.spec.model.src}:{order.spec.model.ref.name}@{revision or ''}:{plan.model_volume}"
    return f"{names.model_volume(order.metadata.name)}-{names.short_hash(key)}"


def model_volume(
    order: InferenceService, plan: PlanView, settings: Settings, *, revision: str | None = None
) -> Obj:
    spec: Obj = {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": plan.model_volume}}}
    if settings.model_storage_class:
        spec["storageClassName"] = settings.model_storage_class
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": _meta(order, model_volume_name(order, plan, revision)),
        "spec": spec,
    }


def _fetcher(order: InferenceService, plan: PlanView, settings: Settings, revision: str | None) -> Obj:
    model = order.spec.model
    repo = model.ref.name
    env: list[Obj] = [
        {"name": "HF_ENDPOINT", "value": settings.hf_endpoint},
        {"name": "HF_HUB_DISABLE_TELEMETRY", "value": "1"},
    ]
    if model.auth_secret_ref is not None:
        env.append(
            {
                "name": "HF_TOKEN",
                "valueFrom": {
                    "secretKeyRef": {
                        "name": model.auth_secret_ref.name,
                        "key": model.auth_secret_ref.key or names.DEFAULT_HF_TOKEN_KEY,
                    }
                },
            }
        )
    args = ["download", repo, "--local-dir", f"{names.MODEL_MOUNT_PATH}/model"]
    if revision:
        args += ["--revision", revision]
    return {
        "name": "model-fetcher",
        "image": settings.model_fetcher_image or plan.image,
        "command": ["hf"],
        "args": args,
        "env": env,
        "volumeMounts": [{"name": "model", "mountPath": names.MODEL_MOUNT_PATH}],
        "securityContext": {"allowPrivilegeEscalation": False},
    }


def deployment(
    order: InferenceService,
    plan: PlanView,
    spec: InferenceServiceClassSpec,
    settings: Settings,
    *,
    revision: str | None,
) -> Obj:
    """The workload. ``replicas`` is left to the HPA (an applied value would fight it)."""
    name = order.metadata.name
    env: list[Obj] = []
    if requires_token(spec):
        env.append(
            {
                "name": names.API_KEY_ENV,
                "valueFrom": {"secretKeyRef": {"name": names.auth_secret(name), "key": names.AUTH_TOKEN_KEY}},
            }
        )
    plan_json = plan.model_dump_json()
    runtime: Obj = {
        "name": "runtime",
        "image": plan.image,
        "args": list(plan.args),
        "env": env,
        "ports": [{"name": "https", "containerPort": names.RUNTIME_PORT, "protocol": "TCP"}],
        "resources": {
            "requests": {"cpu": plan.cpu, "memory": plan.memory},
            "limits": {"memory": plan.memory},
            "claims": [{"name": names.CLAIM_NAME}],
        },
        "readinessProbe": {
            "httpGet": {"path": "/health", "port": names.RUNTIME_PORT, "scheme": "HTTPS"},
            "periodSeconds": 10,
        },
        "volumeMounts": [
            {"name": "model", "mountPath": names.MODEL_MOUNT_PATH, "readOnly": True},
            {"name": "tls", "mountPath": names.TLS_MOUNT_PATH, "readOnly": True},
        ],
    }
    pod_spec: Obj = {
        "initContainers": [_fetcher(order, plan, settings, revision)],
        "containers": [runtime],
        "resourceClaims": [
            {"name": names.CLAIM_NAME, "resourceClaimTemplateName": claim_template_name(order, plan)}
        ],
        "volumes": [
            {
                "name": "model",
                "persistentVolumeClaim": {"claimName": model_volume_name(order, plan, revision)},
            },
            {"name": "tls", "secret": {"secretName": names.tls_secret(name)}},
        ],
    }
    if spec.scaling is not None and spec.scaling.priority_class_name:
        pod_spec["priorityClassName"] = spec.scaling.priority_class_name
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _meta(order, names.workload(name), annotations={PLAN_ANNOTATION: plan_json}),
        "spec": {
            "selector": {"matchLabels": {names.LABEL_ORDER: name}},
            "strategy": {"type": "Recreate"},
            "template": {
                "metadata": {
                    "labels": labels(order),
                    "annotations": {"ai.deckhouse.io/plan-hash": names.short_hash(plan_json, 16)},
                },
                "spec": pod_spec,
            },
        },
    }


def service(order: InferenceService) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _meta(order, names.workload(order.metadata.name)),
        "spec": {
            "selector": {names.LABEL_ORDER: order.metadata.name},
            "ports": [{"name": "https", "port": 443, "targetPort": "https", "protocol": "TCP"}],
        },
    }


def replica_bounds(spec: InferenceServiceClassSpec) -> tuple[int, int, str | None]:
    """(min, max, priorityClassName) the class imposes; max defaults to min."""
    scaling = spec.scaling
    lo = scaling.min_replicas if scaling and scaling.min_replicas else 1
    hi = scaling.max_replicas if scaling and scaling.max_replicas else lo
    return lo, max(lo, hi), scaling.priority_class_name if scaling else None


def autoscaler(order: InferenceService, spec: InferenceServiceClassSpec) -> Obj:
    lo, hi, _ = replica_bounds(spec)
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": _meta(order, names.workload(order.metadata.name)),
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": order.metadata.name},
            "minReplicas": lo,
            "maxReplicas": hi,
            "metrics": [
                {
                    "type": "Resource",
                    "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}},
                }
            ],
        },
    }


def certificate(order: InferenceService, endpoint: Endpoint, settings: Settings) -> Obj:
    name, ns = order.metadata.name, order.metadata.namespace
    dns = [f"{name}.{ns}.svc", f"{name}.{ns}.svc.cluster.local"]
    if endpoint.host not in dns:
        dns.append(endpoint.host)
    return {
        "apiVersion": "cert-manager.io/v1",
        "kind": "Certificate",
        "metadata": _meta(order, names.certificate(name)),
        "spec": {
            "secretName": names.tls_secret(name),
            "dnsNames": dns,
            "issuerRef": {
                "name": settings.endpoint_issuer,
                "kind": settings.endpoint_issuer_kind,
                "group": "cert-manager.io",
            },
            "privateKey": {"algorithm": "ECDSA", "size": 256, "rotationPolicy": "Always"},
        },
    }


def ingress(order: InferenceService, endpoint: Endpoint, settings: Settings) -> Obj:
    name = order.metadata.name
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "Ingress",
        "metadata": _meta(
            order, names.workload(name), annotations={"nginx.ingress.kubernetes.io/backend-protocol": "HTTPS"}
        ),
        "spec": {
            "ingressClassName": settings.ingress_class_name,
            "tls": [{"hosts": [endpoint.host], "secretName": names.tls_secret(name)}],
            "rules": [
                {
                    "host": endpoint.host,
                    "http": {
                        "paths": [
                            {
                                "path": "/",
                                "pathType": "Prefix",
                                "backend": {"service": {"name": name, "port": {"name": "https"}}},
                            }
                        ]
                    },
                }
            ],
        },
    }


def auth_secret(order: InferenceService, token: str) -> Obj:
    """The ``<order>-auth`` Secret. Created once; the token is never rotated by a resync."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": _meta(order, names.auth_secret(order.metadata.name)),
        "type": "Opaque",
        "stringData": {names.AUTH_TOKEN_KEY: token},
    }


def workload(
    order: InferenceService,
    plan: PlanView,
    spec: InferenceServiceClassSpec,
    settings: Settings,
    *,
    revision: str | None,
) -> list[Obj]:
    """Every object to apply for the plan, in apply order (the auth Secret is minted separately)."""
    endpoint = endpoint_for(order, spec, settings)
    objs = [
        resource_claim_template(order, plan),
        model_volume(order, plan, settings, revision=revision),
        certificate(order, endpoint, settings),
        service(order),
        deployment(order, plan, spec, settings, revision=revision),
        autoscaler(order, spec),
    ]
    if endpoint.type == "External":
        objs.append(ingress(order, endpoint, settings))
    return objs
