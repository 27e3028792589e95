"""The snapshot: everything one decision about one order needs, read once, immutable. Pure data.

``controller.observe`` builds it from the caches, the facts store, the probe and progress books;
``controller.decide`` turns it into intents without any I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from controller.config.settings import Settings
from controller.intents import Evict
from controller.live.probe_state import ProbeState as ProbeState  # re-exported: a field of the snapshot
from controller.live.progress import FetchProgress
from controller.model_facts.facts import ModelFacts
from controller.planner import LaunchPlan, PlanOutcome
from controller.planner.headroom import Room
from controller.render.network import ActivatorTarget
from shared.api.enums import EndpointType
from shared.api.inference_class import InferenceServiceClass
from shared.api.order import InferenceService
from shared.api.recipe import InferenceRecipe
from shared.conditions import Verdict

Obj = dict[str, Any]


@dataclass(frozen=True, slots=True)
class ModelObservation:
    """What resolution of the order's model gave: the facts, or the verdict why not.

    ``from_record`` says the facts came from the order's own record (``status.model.revision`` and
    the durable facts store), with no Hub call.
    """

    verdict: Verdict
    facts: ModelFacts | None = None
    endpoint_type: EndpointType | None = None
    from_record: bool = False
    look_again: float | None = None  # seconds until the model's source is asked again, when it said


@dataclass(frozen=True, slots=True)
class Capacity:
    """What the ledger says about the order: whether trying again could help."""

    epoch: int = 0
    exhausted_since: int | None = None  # the ledger epoch when every device class failed the order
    lapsed: bool = False  # its reservation lapsed since its last plan (``controller.lapse``)
    # a serving order that wants more replicas than are available: the ledger's room for them
    # (``booking.room``); None when not asked
    room: Room | None = None


@dataclass(frozen=True, slots=True)
class Snapshot:
    now: float
    settings: Settings
    order: InferenceService
    resource_version: str
    klass: InferenceServiceClass | None
    recipes: tuple[InferenceRecipe, ...]
    model: ModelObservation | None  # None when the class did not resolve
    plan_in_force: LaunchPlan | None
    deployment: Obj | None
    hpa: Obj | None  # KEDA's HPA of the order's ScaledObject, ``keda-hpa-<order>`` (names.keda_hpa)
    pods: tuple[Obj, ...]
    owned: tuple[Obj, ...]  # every live object labelled with the order, of every owned kind
    has_token: bool
    token: str | None
    probe: ProbeState
    capacity: Capacity = field(default_factory=Capacity)
    claims_allocated: bool = False  # the pods of the plan in force have allocated claims
    stale_auth_version: str | None = None  # resourceVersion of a previous order's ``<order>-auth``
    fetch_progress: FetchProgress = field(default_factory=FetchProgress)  # the progress book's record
    # uid -> its controller's uid, above the pods whose fetcher runs (``controller.live.lineage``)
    links: Mapping[str, str] = field(default_factory=dict)
    # what observe read by name of the names the order writes and its caches lack (None: free);
    # a name missing here is not written yet (``controller.live.takeover``)
    held: Mapping[tuple[str, str], Obj | None] = field(default_factory=dict)
    # PriorityClass name -> value (the PriorityClass informer; empty when not watched), and every
    # order's priority (``preemption.priority_value`` of its status.constraints.priorityClassName):
    # the ledger preempts lower-priority orders' replicas for this one with them (None: never)
    priority_values: Mapping[str, int] = field(default_factory=dict)
    priority_of: Callable[[tuple[str, str]], int] | None = None
    # where the activator answers (its Service's ready endpoints in the module namespace), read for
    # an order of a class that scales to zero; None otherwise, or while none is ready
    activator: ActivatorTarget | None = None

    @property
    def key(self) -> tuple[str, str]:
        return (self.order.metadata.namespace or "", self.order.metadata.name)

    def live(self, kind: str, name: str) -> Obj | None:
        for o in self.owned:
            if o.get("kind") == kind and o["metadata"]["name"] == name:
                return o
        return None


@dataclass(frozen=True, slots=True)
class Planning:
    """The planner's answer for this reconcile, taken from the ledger (``None``: not computed)."""

    outcome: PlanOutcome | None = None
    trigger: str = ""
    count: bool = False
    tried: tuple[str, ...] = ()
    evict: tuple[Evict, ...] = ()  # pods of lower-priority orders whose devices the plan counts on
    preempting: bool = False  # the plan booked this reconcile preempts (Events are due)
