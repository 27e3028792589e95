"""The manifests of the order workload (api.md section 4). Pure: plan in, dicts out.

Every object is named after the order and carries a controller ownerReference to it, so deleting
the order deletes them through the garbage collector. All are applied with server-side apply under
one field manager; nothing here reads the cluster.

| module | holds |
|---|---|
| ``common`` | metadata, labels, the ownerReference, the plan view |
| ``claim`` | the ResourceClaimTemplate, with the NVIDIA driver's sharing config |
| ``pod`` | the runtime pod: containers, volumes, security, scheduling |
| ``fetch`` | what the model fetcher downloads, and from where |
| ``timing`` | probes and the progress deadline, sized from the weights |
| ``workload`` | the Deployment and the model volume |
| ``group`` | the LeaderWorkerSet of a multi-node plan, its two claim templates |
| ``ray`` | the NetworkPolicy of each group and Ray's token |
| ``network`` | Service, KEDA ScaledObject (and its Prometheus query), Ingress, Certificate, the auth Secret |

The class's exposure policy (endpoint, token, replica bounds) is ``controller.render.exposure``; it is
re-exported here for the reconciler.
"""

from __future__ import annotations

from controller.config.settings import Settings
from controller.render.claim import (
    claim_request,
    claim_template_name,
    resource_claim_template,
    sharing_config,
)
from controller.render.common import PLAN_ANNOTATION, Obj, PlanView, labels, owner_reference
from controller.render.exposure import (
    Endpoint,
    ScalingPolicy,
    endpoint_for,
    probe_url,
    replica_bounds,
    requires_token,
    scale_to_zero_after,
    scaling_policy,
)
from controller.render.fetch import FetchSpec, fetch_spec
from controller.render.group import (
    claim_templates,
    group_name,
    group_name_of,
    group_network_policies,
    leader_worker_set,
    worker_claim_template_name,
)
from controller.render.network import (
    ActivatorTarget,
    activator_slice,
    auth_secret,
    autoscaler,
    certificate,
    ingress,
    prometheus_query,
    service,
)
from controller.render.workload import deployment, keep_volume_fields, model_volume, model_volume_name
from shared.api.inference_class import InferenceServiceClassSpec
from shared.api.order import InferenceService

__all__ = [
    "PLAN_ANNOTATION",
    "ActivatorTarget",
    "Endpoint",
    "FetchSpec",
    "Obj",
    "PlanView",
    "ScalingPolicy",
    "activator_slice",
    "auth_secret",
    "autoscaler",
    "certificate",
    "claim_request",
    "claim_template_name",
    "claim_templates",
    "deployment",
    "endpoint_for",
    "fetch_spec",
    "group_name",
    "group_name_of",
    "group_network_policies",
    "ingress",
    "keep_volume_fields",
    "labels",
    "leader_worker_set",
    "model_volume",
    "model_volume_name",
    "owner_reference",
    "probe_url",
    "prometheus_query",
    "replica_bounds",
    "requires_token",
    "resource_claim_template",
    "scale_to_zero_after",
    "scaling_policy",
    "service",
    "sharing_config",
    "worker_claim_template_name",
    "workload",
]


def workload(
    order: InferenceService,
    plan: PlanView,
    spec: InferenceServiceClassSpec,
    settings: Settings,
    *,
    revision: str | None,
    fetch: FetchSpec | None = None,
    token_hash: str | None = None,
    activator: ActivatorTarget | None = None,
    may_idle: bool = True,
) -> list[Obj]:
    """Every object to apply for the plan, in apply order (the auth Secret is minted separately).

    ``activator``: where the activator answers, when the order (of a class with ``minReplicas: 0``)
    has no ready replica: its ``<order>-activator`` EndpointSlice follows the Service
    (``activator_slice``); a single-node plan only (a LeaderWorkerSet never scales to zero).
    ``may_idle``: the order has served once, so its ScaledObject may take it to zero (``autoscaler``).

    ``token_hash`` is a digest of the order's token, set on the runtime's pod template so that a
    new token rolls the pods (``TOKEN_HASH_ANNOTATION``).

    ``fetch`` is what the model fetcher downloads (``fetch_spec``); None: the whole repository
    ``spec.model.ref.name``, for callers that have no facts.

    A multi-node plan is a LeaderWorkerSet with its two claim templates, a NetworkPolicy per group
    (applied before the set, so no group's pod runs unguarded) and no autoscaler; the Deployment,
    its model volume and ScaledObject of a single-node plan are then unwanted (and pruned), and the
    other way round."""
    endpoint = endpoint_for(order, spec, settings)
    if plan.node_count > 1:
        objs = [
            *claim_templates(order, plan),
            certificate(order, endpoint, settings),
            service(order, leader_only=True),
            *group_network_policies(order, spec),
            leader_worker_set(
                order, plan, spec, settings, revision=revision, fetch=fetch, token_hash=token_hash
            ),
        ]
        if endpoint.type == "External":
            objs.append(ingress(order, endpoint, settings))
        return objs
    objs = [
        resource_claim_template(order, plan),
        model_volume(order, plan, settings, revision=revision, fetch=fetch),
        certificate(order, endpoint, settings),
        service(order),
        deployment(order, plan, spec, settings, revision=revision, fetch=fetch, token_hash=token_hash),
        autoscaler(order, spec, settings, may_idle=may_idle),
    ]
    if activator is not None and activator.addresses:
        objs.insert(4, activator_slice(order, activator))
    if endpoint.type == "External":
        objs.append(ingress(order, endpoint, settings))
    return objs
