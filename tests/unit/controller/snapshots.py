"""Snapshot builders for table tests of ``planning`` and ``decide``, without a cluster.

A snapshot is what ``controller.observe`` would read: the order (with any prior status), its class,
the model observation, the plan in force, the Deployment, the pods, the owned objects and the probe
book's record. Plans are real planner answers on the default fleet (``devtools.cluster.fleet``), so
device classes, products and claim template names are the ones the controller would produce.

- ``snap(**changes)``: a snapshot of an order of a small chat model, class ``gpu.nvidia.com`` then
  ``mig.nvidia.com``, nothing planned yet;
- ``serving(plan)``: the same order serving on ``plan``: status Ready, a Deployment with an
  available replica of the plan's rollout, a running pod using the plan's claim template, the
  probe ok;
- ``plan_on(device_class)``: the plan the planner makes on an empty fleet when only
  ``device_class`` is allowed;
- ``run_planner(s, decision)``: what the reconciler's ledger call would answer for ``decision``
  (``plan_order`` on the fleet, skipping the decision's tried classes), as a ``Planning``.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from controller import render
from controller.conditions.replan import PlanDecision
from controller.conditions.status import build_status
from controller.config.settings import Settings
from controller.decide import decide
from controller.intents import Intents
from controller.model_facts.facts import ModelFacts
from controller.planner import Inventory, LaunchPlan, PlanOutcome, PlanRequest, plan_order
from controller.planning import plan_decision
from controller.snapshot import Capacity, ModelObservation, Planning, ProbeState, Snapshot
from shared import reasons as r
from shared.api.condition import Condition
from shared.api.inference_class import InferenceServiceClass
from shared.api.order import Endpoint, InferenceService, InferenceServiceStatus, Resolved
from shared.api.recipe import InferenceRecipe
from shared.conditions import Verdict, true
from testkit.planner import fleet_inventory, make_recipe
from tests.unit.controller.builders import make_class, make_order

Obj = dict[str, Any]

NOW = 1_767_225_600.0  # 2026-01-01T00:00:00Z
GPU = "gpu.nvidia.com"
MIG = "mig.nvidia.com"
CLASSES = [GPU, MIG]
MODEL = "Qwen/Qwen2.5-0.5B-Instruct"
REVISION = "7ae557604adf67be50417f59c2c2f167def9a775"
URL = "https://support-llm.support.svc"
TOKEN = "t0k3n"
SETTINGS = Settings(claim_grace_seconds=60.0, scale_up_grace_seconds=120.0, probe_failure_threshold=3)
CLAIMS_FAIL = "0/8 nodes are available: 8 cannot allocate all claims. preemption: not eligible."
TAINTED = (
    "0/8 nodes are available: 8 node(s) had untolerated taint {gpu: reserved}. preemption: 0/8 nodes "
    "are available: 8 Preemption is not helpful for scheduling."
)
NO_CPU = "0/8 nodes are available: 8 Insufficient cpu. preemption: 0/8 nodes are available."
# The real scheduler's words when the planned L4s are free but their nodes lack cpu or memory: its
# resource filter runs before the DRA plugin, so only the nodes without an L4 name the claim.
NO_CPU_WHERE_THE_DEVICES_ARE = (
    "0/8 nodes are available: 2 Insufficient cpu, 2 Insufficient memory, 4 cannot allocate all claims. "
    "preemption: 0/8 nodes are available: 8 Preemption is not helpful for scheduling."
)
UNBOUND_VOLUME = (
    "0/8 nodes are available: pod has unbound immediate PersistentVolumeClaims. preemption: 0/8 nodes "
    "are available: 8 Preemption is not helpful for scheduling."
)

# Qwen/Qwen2.5-0.5B-Instruct: 24 layers, 14 heads, 2 KV heads, hidden 896, BF16 494,032,768 (ties
# its embeddings). It fits any one device of the default fleet, as in the load issue's burst.
SMALL = ModelFacts(
    source="HuggingFace",
    name=MODEL,
    revision=REVISION,
    architecture="Qwen2ForCausalLM",
    endpoint_types=("Chat",),
    parameter_count=494_032_768,
    parameter_dtype_counts={"BF16": 494_032_768},
    context_length=32768,
    torch_dtype="bfloat16",
    num_hidden_layers=24,
    num_attention_heads=14,
    num_key_value_heads=2,
    head_dim=64,
    hidden_size=896,
)


def stamp(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def klass(**changes: Any) -> InferenceServiceClass:
    body: dict[str, Any] = {
        "spec": {"placement": {"deviceClassNames": CLASSES, "sharingModes": ["Exclusive", "MIG"]}}
    }
    for k, v in changes.items():
        body[k] = v
    return make_class(**body)


RECIPES: tuple[InferenceRecipe, ...] = (make_recipe(),)


def resolved_model(facts: ModelFacts = SMALL) -> ModelObservation:
    return ModelObservation(true(r.RESOLVED, f"{facts.name} resolved at {facts.revision}."), facts, "Chat")


@functools.cache
def _fleet() -> Inventory:
    return fleet_inventory()


def request(s: Snapshot, *, skip: Sequence[str] = (), inventory: Inventory | None = None) -> PlanRequest:
    assert s.klass is not None and s.model is not None and s.model.facts is not None
    assert s.model.endpoint_type is not None
    return PlanRequest(
        facts=s.model.facts,
        endpoint_type=s.model.endpoint_type,
        class_spec=s.klass.spec,
        recipes=list(s.recipes),
        inventory=inventory if inventory is not None else _fleet(),
        served_model_name=s.order.spec.model.ref.name,
        skip_device_classes=tuple(skip),
    )


@functools.cache
def plan_on(device_class: str) -> LaunchPlan:
    """The plan for the small model when the planner skips every other device class."""
    s = snap()
    out = plan_order(request(s, skip=[c for c in CLASSES if c != device_class]))
    assert out.ok and out.plan is not None, out
    assert out.plan.device_class == device_class
    return out.plan


def run_planner(s: Snapshot, d: PlanDecision, *, inventory: Inventory | None = None) -> Planning:
    """What the reconciler's ledger call answers for ``d`` (``Planning()`` fields when no compute)."""
    if not d.compute:
        return Planning(trigger=d.trigger, tried=d.tried)
    outcome = plan_order(request(s, skip=d.tried, inventory=inventory))
    return Planning(outcome=outcome, trigger=d.trigger, count=d.count, tried=d.tried)


def failed(reason: str, message: str = "it failed") -> PlanOutcome:
    return PlanOutcome(ok=False, reason=reason, message=message)


def ok(plan: LaunchPlan) -> PlanOutcome:
    return PlanOutcome(ok=True, reason=r.PLANNED_OK, message=f"planned {plan.summary()}", plan=plan)


# ------------------------------------------------------------------ live objects

DEPLOYMENT_UID = "dep-1"
REPLICA_SET_UID = "rs-1"
LINKS = {REPLICA_SET_UID: DEPLOYMENT_UID}  # what observe reads above the pods of ``pod``


def deployment(
    plan: LaunchPlan | None = None,
    *,
    available: int = 0,
    replicas: int = 1,
    generation: int = 1,
    conditions: Sequence[Obj] = (),
) -> Obj:
    annotations = {render.PLAN_ANNOTATION: plan.model_dump_json()} if plan is not None else {}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "support-llm",
            "namespace": "support",
            "uid": DEPLOYMENT_UID,
            "generation": generation,
            "annotations": annotations,
            "ownerReferences": [render.owner_reference(make_order())],
        },
        "spec": {"replicas": replicas},
        "status": {
            "observedGeneration": generation,
            "replicas": replicas,
            "updatedReplicas": max(available, 1 if replicas else 0),
            "availableReplicas": available,
            "conditions": list(conditions),
        },
    }


def template_of(plan: LaunchPlan, order: InferenceService | None = None) -> str:
    return render.claim_template_name(order or make_order(), plan)


def pod(
    name: str,
    plan: LaunchPlan,
    *,
    running: bool = False,
    unschedulable: str | None = None,
    since: float = NOW - 600,
) -> Obj:
    """A pod of ``plan`` (it uses the plan's claim template): running, or unschedulable with
    ``unschedulable`` as the scheduler's message since ``since``, or pending without a condition."""
    conditions: list[Obj] = []
    if unschedulable is not None:
        conditions.append(
            {
                "type": "PodScheduled",
                "status": "False",
                "reason": "Unschedulable",
                "message": unschedulable,
                "lastTransitionTime": stamp(since),
            }
        )
    elif running:
        conditions += [
            {"type": "PodScheduled", "status": "True", "lastTransitionTime": stamp(since)},
            {"type": "Ready", "status": "True", "lastTransitionTime": stamp(since)},
        ]
    status: Obj = {"phase": "Running" if running else "Pending", "conditions": conditions}
    if running:
        status["resourceClaimStatuses"] = [{"name": "gpu", "resourceClaimName": f"{name}-gpu-x1y2z"}]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "support",
            "uid": f"pod-{name}",
            "labels": render.labels(make_order()),
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": "support-llm-7d9f",
                    "uid": REPLICA_SET_UID,
                    "controller": True,
                }
            ],
        },
        "spec": {"resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": template_of(plan)}]},
        "status": status,
    }


def hpa(desired: int) -> Obj:
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "support-llm", "namespace": "support"},
        "status": {"desiredReplicas": desired, "currentReplicas": 1},
    }


# ------------------------------------------------------------------ orders and statuses


def condition(type_: str, status: str, reason: str, message: str = "", *, generation: int = 1) -> Condition:
    return Condition(
        type=type_,
        status=status,
        reason=reason,
        message=message,
        observed_generation=generation,
        last_transition_time=stamp(NOW - 3600),
    )


def resolved_for(
    plan: LaunchPlan | None, *, tried: Sequence[str] = (), replans: int = 0, generation: int = 1
) -> Resolved:
    fields: dict[str, Any] = {
        "order_generation": generation,
        "class_generation": 1,
        "tried_device_classes": list(tried) or None,
        "replan_count": replans,
    }
    if plan is not None:
        fields |= {
            "device_class": plan.device_class,
            "accelerator_product_name": plan.product_name,
            "accelerator_count": plan.accelerator_count,
            "sharing_mode": plan.sharing_mode,
            "recipe": plan.recipe,
        }
    return Resolved.model_validate(fields)


def status(
    conditions: dict[str, tuple[str, str]] | None = None,
    *,
    resolved: Resolved | None = None,
    endpoint: bool = True,
) -> InferenceServiceStatus:
    """A prior status: ``{type: (status, reason)}`` for the conditions given."""
    conds = [
        condition(t, st, reason, f"{t} said {reason}.") for t, (st, reason) in (conditions or {}).items()
    ]
    return InferenceServiceStatus(
        observed_generation=1,
        conditions=conds,
        endpoint=Endpoint(url=URL, type="ClusterLocal") if endpoint else None,
        resolved=resolved,
    )


READY_STATUS = {
    r.CLASS_RESOLVED: ("True", r.RESOLVED),
    r.MODEL_RESOLVED: ("True", r.RESOLVED),
    r.PLANNED: ("True", r.PLANNED_OK),
    r.WORKLOAD_READY: ("True", r.AVAILABLE),
    r.READY: ("True", r.SERVING),
    r.SCALING_HEALTHY: ("True", r.SCALING_HEALTHY_OK),
}


def order_with(prior: InferenceServiceStatus | None = None, **changes: Any) -> InferenceService:
    order = make_order(spec={"model": {"ref": {"name": MODEL}}}, **changes)
    if prior is not None:
        order = order.model_copy(update={"status": prior})
    return order


class AllFree(Mapping[tuple[str, str], Obj | None]):
    """``Snapshot.held`` as observe reads it when nothing else holds a name the order writes."""

    def __getitem__(self, key: tuple[str, str]) -> Obj | None:
        return None

    def __contains__(self, key: object) -> bool:
        return True

    def __iter__(self) -> Iterator[tuple[str, str]]:
        return iter(())

    def __len__(self) -> int:
        return 0


def snap(**changes: Any) -> Snapshot:
    """A snapshot of a new order of the small model; ``changes`` replace snapshot fields."""
    order = changes.pop("order", None) or order_with()
    base = Snapshot(
        now=NOW,
        settings=SETTINGS,
        order=order,
        resource_version="7",
        klass=klass(),
        recipes=RECIPES,
        model=resolved_model(),
        plan_in_force=None,
        deployment=None,
        hpa=None,
        pods=(),
        owned=(),
        has_token=True,
        token=TOKEN,
        probe=ProbeState(),
        capacity=Capacity(epoch=1),
        held=AllFree(),
    )
    return replace(base, **changes)


def serving(plan: LaunchPlan, prior: InferenceServiceStatus | None = None, **changes: Any) -> Snapshot:
    """The order serving on ``plan``: an available replica of its rollout, its pod running, probe ok."""
    prior = prior or status(READY_STATUS, resolved=resolved_for(plan))
    base: dict[str, Any] = {
        "order": order_with(prior),
        "plan_in_force": plan,
        "deployment": deployment(plan, available=1),
        "pods": (pod("support-llm-6f7d9-abcde", plan, running=True),),
        "probe": ProbeState(ok=True, detail="200 OK", at=NOW - 1),
        "claims_allocated": True,
    }
    base.update(changes)
    return snap(**base)


def built(s: Snapshot, intents: Intents) -> InferenceServiceStatus:
    """The status ``act`` would write for these intents."""
    return build_status(
        s.order, intents.verdicts, intents.fields, now=stamp(s.now), advisory=intents.advisory
    )


def conditions_of(st: InferenceServiceStatus) -> dict[str, tuple[str, str]]:
    return {c.type: (c.status, c.reason) for c in st.conditions or []}


def decide_and_build(s: Snapshot, p: Planning) -> tuple[Intents, InferenceServiceStatus]:
    intents = decide(s, p)
    return intents, built(s, intents)


def first_passes(s: Snapshot) -> tuple[Intents, InferenceServiceStatus, Intents]:
    """A new order's first reconcile (plans and writes Planned, applies nothing:
    ``decide.planned_first``) and the next one (applies the workload), as the reconciler runs them:
    the second observes the first's status and its plan as the plan in force."""
    p = run_planner(s, plan_decision(s))
    first, st = decide_and_build(s, p)
    after = replace(s, order=s.order.model_copy(update={"status": st}), plan_in_force=first.plan)
    return first, st, decide(after, run_planner(after, plan_decision(after)))


def verdict(intents: Intents, type_: str) -> Verdict | None:
    return intents.verdicts.get(type_)
