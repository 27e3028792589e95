"""observe: build one immutable snapshot of everything the decision about one order needs.

Reads the informer caches (through ``store.Store``), the durable facts store, the Hub (only while
the order's model has never been resolved for its generation), the probe and progress books and
the ledger.
Writes nothing.
"""

from __future__ import annotations

import base64
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from controller import desired, render
from controller.caching import parsed
from controller.conditions import class_access, resolve
from controller.config.settings import Settings
from controller.kinds import OWNED, Cache
from controller.kube import apply as kapi
from controller.kube import errors as kerr
from controller.live import lineage, progress, takeover, zero
from controller.live.auth_token import read_auth
from controller.live.probes import ProbeBook
from controller.live.progress_book import ProgressBook
from controller.live.workload import own_claim_names, plan_annotation, uses_claim_template
from controller.modelhub.client import (
    HubClient,
    ModelAccessDenied,
    ModelNotFound,
    ModelNotReady,
    ModelSourceUnavailable,
)
from controller.planner import LaunchPlan, preemption
from controller.planner.ledger import Ledger
from controller.render.network import ActivatorTarget
from controller.snapshot import Capacity, ModelObservation, Snapshot
from controller.store import Store
from shared import names
from shared import reasons as r
from shared.api.inference_class import InferenceServiceClassSpec
from shared.api.order import InferenceService
from shared.api.recipe import InferenceRecipe
from shared.conditions import Verdict, false, find, true

log = logging.getLogger(__name__)
Obj = dict[str, Any]

# Reasons after which the model was never resolved for the generation: the Hub is asked again.
_UNRESOLVED = frozenset(
    {
        r.MODEL_SOURCE_UNAVAILABLE,
        r.MODEL_NOT_FOUND,
        r.MODEL_ACCESS_DENIED,
        r.AUTH_SECRET_NOT_FOUND,
        r.CATALOG_DISABLED,
        r.SOURCE_NOT_ALLOWED,
        r.MODEL_NOT_READY,
    }
)


@dataclass
class Observer:
    api: Any
    store: Store
    hub: HubClient
    probes: ProbeBook
    progress: ProgressBook
    ledger: Ledger
    settings: Settings
    applied_plan: Callable[[tuple[str, str]], LaunchPlan | None]
    lapsed: Callable[[tuple[str, str]], bool] = lambda key: False  # ``Reconciler.lapsed``

    def snapshot(self, order: InferenceService, raw: Obj, now: float) -> Snapshot:
        ns, name = order.metadata.namespace or "", order.metadata.name
        recipes = self._recipes()
        class_raw = self.store.get(Cache.CLASSES, None, order.spec.inference_service_class_name)
        if class_raw is not None and not class_access.admits(
            class_raw, self.store.get(Cache.NAMESPACES, None, ns)
        ):
            class_raw = None  # not for this namespace: to the order, the class does not exist
        klass = parsed.CLASSES(class_raw) if class_raw else None
        model = self._model(order, klass.spec) if klass is not None else None
        owned = tuple(
            o for k in OWNED if self.store.watches(k.cache) for o in self.store.labelled(k.cache, ns, name)
        )
        pods = tuple(self.store.labelled(Cache.PODS, ns, name))
        in_force = self.plan_in_force(order)
        deployment = self._workload(ns, name, in_force)
        auth = read_auth(self.store.get(Cache.SECRETS, ns, names.auth_secret(name)), order.metadata.uid)
        exhausted = self.ledger.exhausted_since((ns, name))
        return Snapshot(
            now=now,
            settings=self.settings,
            order=order,
            resource_version=str(raw["metadata"].get("resourceVersion", "")),
            klass=klass,
            recipes=recipes,
            model=model,
            plan_in_force=in_force,
            deployment=deployment,
            hpa=self.store.get(Cache.HPAS, ns, names.keda_hpa(name)),
            pods=pods,
            owned=owned,
            has_token=auth.token is not None,
            token=auth.token,
            stale_auth_version=auth.stale_version,
            probe=self.probes.state((ns, name), render.probe_url(order)),
            capacity=Capacity(
                epoch=self.ledger.epoch, exhausted_since=exhausted, lapsed=self.lapsed((ns, name))
            ),
            claims_allocated=self.claims_allocated(order, in_force),
            fetch_progress=self.progress.state((ns, name)),
            links=self._links(ns, pods),
            held=self._held(
                order,
                owned,
                wants_token=bool(klass and render.requires_token(klass.spec)) and auth.token is None,
                in_force=in_force is not None,
            ),
            priority_values=(values := self._priority_values()),
            priority_of=lambda key: self._priority_of(key, values),
            activator=self._activator() if klass and render.scale_to_zero_after(klass.spec) else None,
        )

    def _activator(self) -> ActivatorTarget | None:
        """Where the activator answers (``controller.live.zero.activator_target``); None when its
        slices are not watched."""
        if not self.store.watches(Cache.ACTIVATOR_SLICES):
            return None
        return zero.activator_target(self.store.list(Cache.ACTIVATOR_SLICES))

    def _priority_values(self) -> dict[str, int]:
        """PriorityClass name -> value (empty when PriorityClasses are not watched)."""
        if not self.store.watches(Cache.PRIORITY_CLASSES):
            return {}
        return {
            str(p["metadata"]["name"]): int(p.get("value") or 0)
            for p in self.store.list(Cache.PRIORITY_CLASSES)
        }

    def _priority_of(self, order: tuple[str, str], values: dict[str, int]) -> int:
        """An order's priority: its status.constraints.priorityClassName's value in ``values`` (the
        PriorityClasses read once per snapshot; 0 when unknown)."""
        raw = self.store.get(Cache.ORDERS, order[0], order[1])
        name = (((raw or {}).get("status") or {}).get("constraints") or {}).get("priorityClassName")
        return preemption.priority_value(name, values)

    def _held(
        self, order: InferenceService, owned: tuple[Obj, ...], *, wants_token: bool, in_force: bool
    ) -> dict[tuple[str, str], Obj | None]:
        """What holds the names the order writes and its caches lack, read by name
        (``controller.live.takeover``): those its last render wanted, and ``<order>-auth`` while its
        token is to be minted (not before its first plan is in force: a new order's first pass
        writes only its plan)."""
        ns, meta = order.metadata.namespace or "", order.metadata
        wanted = desired.last_names((ns, meta.name, meta.uid or ""))
        if not wanted and not in_force:
            return {}
        by_name = {(str(o.get("kind")), o["metadata"]["name"]): o for o in owned}
        live = lambda kind, name: by_name.get((kind, name))  # noqa: E731
        judged = takeover.names_to_judge(order, wanted, token=wants_token, live=live)
        out: dict[tuple[str, str], Obj | None] = {}
        for api_version, kind, name in takeover.names_to_read(judged, live):
            try:
                found = kapi.get(self.api, api_version, kind, namespace=ns, name=name)
            except kerr.KubeError as e:  # not read: not written; the order is looked at again
                log.info("reading %s %s/%s failed: %s", kind, ns, name, e)
                continue
            out[(kind, name)] = None if found is None else {"metadata": found.get("metadata") or {}}
        return out

    def _links(self, ns: str, pods: tuple[Obj, ...]) -> dict[str, str]:
        """The controller chain above the pods whose fetcher runs (``controller.live.lineage``); nothing
        is read while no fetcher runs."""
        starts = [p for p in pods if progress.fetching_pod([p]) is not None]
        if not starts:
            return {}

        def get(kind: str, name: str) -> Obj | None:
            try:
                return kapi.get(self.api, "apps/v1", kind, namespace=ns, name=name)
            except kerr.KubeError as e:  # no link, no scrape: the message waits for the next pass
                log.info("reading %s %s/%s failed: %s", kind, ns, name, e)
                return None

        return lineage.links(pods, starts, get)

    def plan_in_force(self, order: InferenceService) -> LaunchPlan | None:
        """The plan this process last applied, else the one recorded on the Deployment or the
        LeaderWorkerSet (a multi-node plan)."""
        ns, name = order.metadata.namespace or "", order.metadata.name
        return (
            self.applied_plan((ns, name))
            or plan_annotation(self.store.get(Cache.DEPLOYMENTS, ns, name))
            or plan_annotation(self._group(ns, name))
        )

    def _group(self, ns: str, name: str) -> Obj | None:
        if not self.store.watches(Cache.LEADER_WORKER_SETS):
            return None
        return self.store.get(Cache.LEADER_WORKER_SETS, ns, render.group_name_of(name))

    def _workload(self, ns: str, name: str, plan: LaunchPlan | None) -> Obj | None:
        """The workload of the plan in force: its LeaderWorkerSet when multi-node, else the Deployment."""
        if plan is not None and plan.node_count > 1:
            return self._group(ns, name)
        return self.store.get(Cache.DEPLOYMENTS, ns, name)

    def claims_allocated(self, order: InferenceService, plan: LaunchPlan | None) -> bool:
        ns = order.metadata.namespace or ""
        pods = tuple(self.store.labelled(Cache.PODS, ns, order.metadata.name))
        return _allocated(self.store, ns, pods, plan, order)

    def _recipes(self) -> tuple[InferenceRecipe, ...]:
        out = []
        for obj in self.store.list(Cache.RECIPES):
            try:
                out.append(parsed.RECIPES(obj))
            except ValidationError:
                log.warning("recipe %s does not parse; ignored", obj["metadata"]["name"])
        return tuple(sorted(out, key=lambda x: x.metadata.name))

    def _model(self, order: InferenceService, cspec: InferenceServiceClassSpec) -> ModelObservation:
        try:
            verdict, facts = self._facts(order, cspec)
        except ModelSourceUnavailable as e:  # looked at again when the Hub client's backoff has passed
            return ModelObservation(false(r.MODEL_SOURCE_UNAVAILABLE, str(e)), look_again=e.retry_after)
        if facts is None or not verdict.ok:
            return ModelObservation(verdict, facts)
        policy, endpoint_type = resolve.policy_verdict(facts, cspec)
        if policy.ok:
            refused = resolve.remote_code_verdict(facts, cspec, self._recipes())
            if refused is not None:
                return ModelObservation(refused, facts)
        return ModelObservation(policy, facts, endpoint_type)

    def _facts(self, order: InferenceService, cspec: InferenceServiceClassSpec) -> tuple[Verdict, Any]:
        model = order.spec.model
        bad_source = resolve.source_verdict(model, cspec)
        if bad_source is not None:
            return bad_source, None
        ns = order.metadata.namespace or ""
        if model.src == "Catalog":
            if not self.settings.catalog_enabled:
                return false(
                    r.CATALOG_DISABLED,
                    "Catalog integration is off in the module settings; use `spec.model.src: HuggingFace` or "
                    "ask your administrator to turn it on.",
                ), None
            kind = model.ref.kind or "ClusterModel"
            obj = (
                self.store.get(Cache.CLUSTER_MODELS, None, model.ref.name)
                if kind == "ClusterModel"
                else self.store.get(Cache.MODELS, ns, model.ref.name)
            )
            v, facts = resolve.catalog_facts(model.ref.name, kind, obj)
            return v, facts
        record = recorded_revision(order)
        if record is not None and not self.settings.follow_model_revisions:
            facts = self.hub.cached_facts(repo_id=model.ref.name, sha=record)  # never the Hub
            if facts is not None:
                return true(r.RESOLVED, f"{model.ref.name} resolved at {record}."), facts
            revision: str | None = record  # the record stands; only its facts are fetched again
        else:
            revision = model.ref.revision
        token: str | None = None
        if model.auth_secret_ref is not None:
            ref = model.auth_secret_ref
            key = ref.key or names.DEFAULT_HF_TOKEN_KEY
            secret = kapi.get(self.api, "v1", "Secret", namespace=ns, name=ref.name)
            data = (secret or {}).get("data") or {}
            if secret is None or key not in data:
                what = f"Secret `{ref.name}`" if secret is None else f"key `{key}` of Secret `{ref.name}`"
                return false(
                    r.AUTH_SECRET_NOT_FOUND,
                    f"{what} named in `spec.model.authSecretRef` does not exist in namespace `{ns}`.",
                ), None
            token = base64.b64decode(data[key]).decode().strip()
        try:
            facts = self.hub.fetch_facts(repo_id=model.ref.name, revision=revision, token=token)
        except ModelNotFound as e:
            return false(r.MODEL_NOT_FOUND, str(e)), None
        except ModelAccessDenied as e:
            return false(r.MODEL_ACCESS_DENIED, str(e)), None
        except ModelNotReady as e:
            return false(r.MODEL_NOT_READY, str(e)), None
        return true(r.RESOLVED, f"{model.ref.name} resolved at {facts.revision}."), facts


def recorded_revision(order: InferenceService) -> str | None:
    """The commit the order's model was resolved to for its generation, when that is on record."""
    model = order.status.model
    c = find(order.status.conditions, r.MODEL_RESOLVED)
    if model is None or not model.revision or c is None:
        return None
    if c.observed_generation != order.metadata.generation or c.reason in _UNRESOLVED:
        return None
    return model.revision


def _allocated(
    store: Store, ns: str, pods: tuple[Obj, ...], plan: LaunchPlan | None, order: InferenceService
) -> bool:
    """Whether some pod of the plan in force has all its ResourceClaims allocated."""
    if plan is None:
        return False
    template = render.claim_template_name(order, plan)
    for pod in pods:
        if not uses_claim_template(pod, template):
            continue
        claims = own_claim_names([pod])
        if claims and all(
            ((store.get(Cache.RESOURCE_CLAIMS, ns, c) or {}).get("status") or {}).get("allocation")
            for c in claims
        ):
            return True
    return False
