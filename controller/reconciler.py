"""The reconciler shell: observe (informer caches) -> decide (pure steps) -> act (SSA, /status).

``Reconciler.reconcile_order(key)`` is level-triggered: it takes a key, never an event, and enforces
the whole desired state every time. The chain runs in the order of the conditions: resolve class,
resolve model, plan, render and apply, endpoint and token, probe, scaling health, status. Status is
computed once and written once, through ``/status``, only when it changed, with the
resourceVersion it was computed from (a 409 is re-read and retried by the queue).

Return value: seconds until the key should be looked at again (``None``: only on events).
Exceptions mean a rate-limited requeue.
"""

from __future__ import annotations

import base64
import json
import logging
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

from pydantic import ValidationError

from controller import drift, observe, render, resolve
from controller.facts import ModelFacts
from controller.hub import HubClient, ModelAccessDenied, ModelNotFound, ModelSourceUnavailable
from controller.kube import apply as kapi
from controller.kube import errors as kerr
from controller.metrics import ControllerMetrics
from controller.planner import LaunchPlan, PlanRequest, build_inventory, plan_order
from controller.probe import Prober
from controller.replan import decide_plan
from controller.settings import Settings
from controller.status import StatusFields, build_status, merge_patch, status_changed, transitions
from shared import names
from shared import reasons as r
from shared.api.inference_class import InferenceServiceClass
from shared.api.order import Constraints, Endpoint, InferenceService, Resolved, ResolvedModel
from shared.api.recipe import InferenceRecipe
from shared.cel import selector_error
from shared.conditions import Verdict, false, find, set_condition, true, unknown

log = logging.getLogger(__name__)
Obj = dict[str, Any]
Key = tuple[str, str, str]  # (kind, namespace, name): kind is "order" or "class"


class Store(Protocol):
    """Read access to the informer caches, by cache name."""

    def get(self, cache: str, namespace: str | None, name: str) -> Obj | None: ...
    def list(self, cache: str, namespace: str | None = None) -> list[Obj]: ...


@dataclass
class ProbeState:
    failures: int = 0
    last: float = 0.0
    result: Verdict | None = None


@dataclass
class Reconciler:
    """The shell. Holds only caches of slow facts and probe counters; the truth is in the cluster."""

    api: Any
    store: Store
    hub: HubClient
    prober: Prober
    settings: Settings
    metrics: ControllerMetrics
    clock: Callable[[], float] = time.time
    probes: dict[tuple[str, str], ProbeState] = field(default_factory=dict)
    # The plan this process last applied per order. The informer caches of the order and of its
    # Deployment are updated by separate watches, so a reconcile may see our new status before our
    # new Deployment; it must not take the old Deployment's plan for the plan in force.
    applied_plans: dict[tuple[str, str], LaunchPlan] = field(default_factory=dict)
    # The resourceVersion our last status write returned, per order: a cached order older than it
    # would make us decide on a status we have already replaced.
    written: dict[tuple[str, str], str] = field(default_factory=dict)

    # ---------------------------------------------------------------- order

    def reconcile_order(self, namespace: str, name: str) -> float | None:
        raw = self.store.get("orders", namespace, name)
        if raw is None:
            self.probes.pop((namespace, name), None)
            self.applied_plans.pop((namespace, name), None)
            self.written.pop((namespace, name), None)
            return None
        if raw["metadata"].get("deletionTimestamp"):
            return None  # the garbage collector deletes what the order owns
        try:
            order = InferenceService.model_validate(raw)
        except ValidationError as e:  # the webhook and the schema should make this impossible
            log.warning("order %s/%s does not parse: %s", namespace, name, e)
            return None
        now = self.clock()
        if _older(raw["metadata"].get("resourceVersion"), self.written.get((namespace, name))):
            return 1.0  # the cache has not seen our last status write yet
        outcome = self._decide_and_act(order, raw, now)
        if outcome.stale:
            return 1.0  # our own last write has not reached every cache yet: look again shortly
        self._write_status(order, raw, outcome, now)
        return outcome.requeue

    def _decide_and_act(self, order: InferenceService, raw: Obj, now: float) -> _Outcome:
        out = _Outcome()
        spec = order.spec
        recipes = self._recipes()
        class_raw = self.store.get("classes", None, spec.inference_service_class_name)
        klass = InferenceServiceClass.model_validate(class_raw) if class_raw else None
        v = resolve.class_verdict(
            spec.inference_service_class_name, klass, recipe_names=[x.metadata.name for x in recipes]
        )
        out.verdicts[r.CLASS_RESOLVED] = v
        if not v.ok or klass is None:
            return out
        cspec = klass.spec
        lo, hi, prio = render.replica_bounds(cspec)
        out.fields["constraints"] = Constraints(min_replicas=lo, max_replicas=hi, priority_class_name=prio)

        # 2. model
        facts, v = self._resolve_model(order, cspec)
        endpoint_type = None
        if facts is not None and v.ok:
            v, endpoint_type = resolve.policy_verdict(facts, cspec)
        out.verdicts[r.MODEL_RESOLVED] = v
        if facts is not None:
            out.fields["model"] = ResolvedModel(
                endpoint_type=endpoint_type,
                architecture=facts.architecture,
                format=facts.format,
                quantization=facts.quantization_label,
                parameter_count=facts.parameter_count,
                context_length=facts.context_length,
                revision=facts.revision,
            )
        if not v.ok or facts is None or endpoint_type is None:
            if v.reason == r.MODEL_SOURCE_UNAVAILABLE:
                out.requeue = 10.0
            return out

        # 3. plan
        plan, v = self._plan(order, klass, facts, endpoint_type, recipes, now, out)
        out.verdicts[r.PLANNED] = v
        if plan is None:
            return out

        # 4. render and apply; 5. endpoint and token
        endpoint = render.endpoint_for(order, cspec, self.settings)
        token = self._ensure_token(order) if render.requires_token(cspec) else None
        try:
            if v.reason != r.LAUNCH_PLAN_IN_FORCE:
                # A plan kept in force was rendered for the model it serves, not for the edited
                # spec: leave its workload exactly as it is.
                self._apply_workload(order, raw, plan, cspec, facts.revision)
        except (kerr.Invalid, kerr.NotFound, kerr.Forbidden) as e:
            # Not transient: a missing API (cert-manager not installed), RBAC, or a refused manifest.
            # status.resolved keeps the plan last applied in full, so the next reconcile tries again.
            out.verdicts[r.WORKLOAD_READY] = false(r.WORKLOAD_FAILED, f"Applying the workload failed: {e}")
            if order.status.resolved is not None:
                out.fields["resolved"] = order.status.resolved
            out.requeue = 30.0
            return out
        out.fields["endpoint"] = Endpoint(url=endpoint.url, type=endpoint.type)
        if token is not None:
            out.fields["auth_secret_name"] = names.auth_secret(order.metadata.name)
        else:
            out.fields["clear_auth_secret_name"] = True

        # WorkloadReady
        deployment = self.store.get("deployments", order.metadata.namespace, order.metadata.name)
        pods = self._pods(order)
        v = observe.workload_verdict(deployment, pods)
        out.verdicts[r.WORKLOAD_READY] = v
        if not v.ok:
            stuck = observe.claim_stuck_since(deployment, pods)
            if stuck is not None:
                out.requeue = max(1.0, stuck + self.settings.claim_grace_seconds - now)
            else:
                out.requeue = 15.0
            return out

        # 6. probe
        out.verdicts[r.READY], wait = self._probe(order, endpoint.url, token, now)
        out.requeue = wait

        # 7. scaling health
        hpa = self.store.get("hpas", order.metadata.namespace, order.metadata.name)
        sv, again = observe.scaling_verdict(
            deployment, hpa, pods, now=now, grace=self.settings.scale_up_grace_seconds
        )
        out.verdicts[r.SCALING_HEALTHY] = sv
        if again is not None:
            out.requeue = min(out.requeue or again, again)
        return out

    # ------------------------------------------------------------ steps

    def _recipes(self) -> list[InferenceRecipe]:
        out = []
        for obj in self.store.list("recipes"):
            try:
                out.append(InferenceRecipe.model_validate(obj))
            except ValidationError:
                log.warning("recipe %s does not parse; ignored", obj["metadata"]["name"])
        return sorted(out, key=lambda x: x.metadata.name)

    def _resolve_model(self, order: InferenceService, cspec: Any) -> tuple[ModelFacts | None, Verdict]:
        model = order.spec.model
        bad_source = resolve.source_verdict(model, cspec)
        if bad_source is not None:
            return None, bad_source
        ns = order.metadata.namespace or ""
        if model.src == "Catalog":
            if not self.settings.catalog_enabled:
                return None, false(
                    r.CATALOG_DISABLED,
                    "Catalog integration is off in the module settings; use `spec.model.src: HuggingFace` or ask "
                    "your administrator to turn it on.",
                )
            kind = model.ref.kind or "ClusterModel"
            obj = (
                self.store.get("clustermodels", None, model.ref.name)
                if kind == "ClusterModel"
                else self.store.get("models", ns, model.ref.name)
            )
            v, facts = resolve.catalog_facts(model.ref.name, kind, obj)
            return facts, v
        token: str | None = None
        if model.auth_secret_ref is not None:
            ref = model.auth_secret_ref
            key = ref.key or names.DEFAULT_HF_TOKEN_KEY
            secret = self.store.get("secrets", ns, ref.name)
            data = (secret or {}).get("data") or {}
            if secret is None or key not in data:
                what = f"Secret `{ref.name}`" if secret is None else f"key `{key}` of Secret `{ref.name}`"
                return None, false(
                    r.AUTH_SECRET_NOT_FOUND,
                    f"{what} named in `spec.model.authSecretRef` does not exist in namespace `{ns}`.",
                )
            token = base64.b64decode(data[key]).decode().strip()
        try:
            facts = self.hub.fetch_facts(repo_id=model.ref.name, revision=model.ref.revision, token=token)
        except ModelNotFound as e:
            return None, false(r.MODEL_NOT_FOUND, str(e))
        except ModelAccessDenied as e:
            return None, false(r.MODEL_ACCESS_DENIED, str(e))
        except ModelSourceUnavailable as e:
            return None, false(r.MODEL_SOURCE_UNAVAILABLE, str(e))
        return facts, true(r.RESOLVED, f"{model.ref.name} resolved.")

    def _plan_in_force(self, order: InferenceService) -> LaunchPlan | None:
        applied = self.applied_plans.get((order.metadata.namespace or "", order.metadata.name))
        if applied is not None:
            return applied
        dep = self.store.get("deployments", order.metadata.namespace, order.metadata.name)
        text = ((dep or {}).get("metadata", {}).get("annotations") or {}).get(render.PLAN_ANNOTATION)
        if not text:
            return None
        try:
            return LaunchPlan.model_validate_json(text)
        except ValidationError:
            return None

    def _plan(
        self,
        order: InferenceService,
        klass: InferenceServiceClass,
        facts: ModelFacts,
        endpoint_type: Any,
        recipes: list[InferenceRecipe],
        now: float,
        out: _Outcome,
    ) -> tuple[LaunchPlan | None, Verdict]:
        prev = order.status.resolved
        in_force = self._plan_in_force(order)
        pods = self._pods(order)
        deployment = self.store.get("deployments", order.metadata.namespace, order.metadata.name)
        stuck_since = observe.claim_stuck_since(deployment, pods)
        stuck_class = None
        if (
            in_force is not None
            and stuck_since is not None
            and now - stuck_since >= self.settings.claim_grace_seconds
        ):
            stuck_class = in_force.device_class
        decision = decide_plan(
            prev,
            has_plan_in_force=in_force is not None,
            order_generation=order.metadata.generation or 0,
            class_generation=klass.metadata.generation or 0,
            stuck_device_class=stuck_class,
        )
        count = (prev.replan_count if prev else 0) + (1 if decision.count else 0)
        basis = {
            "order_generation": order.metadata.generation or 0,
            "class_generation": klass.metadata.generation or 0,
            "tried_device_classes": list(decision.tried) or None,
            "replan_count": count,
        }
        if (
            not decision.compute
            and in_force is not None
            and prev is not None
            and not _same_place(in_force, prev)
        ):
            # status.resolved records the plan last applied; a Deployment cache that says otherwise
            # has not caught up with our own apply yet.
            out.stale = True
            return None, unknown(r.RECONCILING, "Waiting for the caches to catch up.")
        if not decision.compute and in_force is not None:
            resolved = (prev or Resolved()).model_copy(update=basis)
            out.fields["resolved"] = resolved
            current = find(order.status.conditions, r.PLANNED)
            if current is not None and current.reason == r.LAUNCH_PLAN_IN_FORCE:
                # The last recomputation failed and nothing has changed since: still in force.
                return in_force, true(r.LAUNCH_PLAN_IN_FORCE, current.message)
            if current is not None and current.reason == r.RESOURCE_CLAIM_EXHAUSTED:
                # Every device class was tried; nothing has changed since.
                return None, false(r.RESOURCE_CLAIM_EXHAUSTED, current.message)
            return in_force, true(r.PLANNED_OK, f"Planned: {in_force.summary()}.")
        spec = klass.spec
        inventory = build_inventory(
            resource_slices=self.store.list("resourceslices"),
            device_classes=self.store.list("deviceclasses"),
            resource_claims=self.store.list("resourceclaims"),
            own_claims=observe.own_claim_names(pods),
            namespace=order.metadata.namespace or "",
        )
        if isinstance(inventory, str):
            outcome_ok, reason, message, plan = False, r.PLACEMENT_UNDECIDABLE, inventory, None
        else:
            outcome = plan_order(
                PlanRequest(
                    facts=facts,
                    endpoint_type=endpoint_type,
                    class_spec=spec,
                    recipes=recipes,
                    inventory=inventory,
                    served_model_name=order.spec.model.ref.name,
                    skip_device_classes=decision.tried,
                    previous=in_force,
                    requires_token=render.requires_token(spec),
                )
            )
            outcome_ok, reason, message, plan = outcome.ok, outcome.reason, outcome.message, outcome.plan
        self.metrics.plans.labels(outcome=reason).inc()
        if outcome_ok and plan is not None:
            out.fields["resolved"] = Resolved(
                device_class=plan.device_class,
                accelerator_product_name=plan.product_name,
                accelerator_memory_gi_b=plan.accelerator_memory_gib,
                accelerator_count=plan.accelerator_count,
                placement_mode=plan.placement_mode,
                sharing_mode=plan.sharing_mode,
                share_percent=plan.share_percent,
                cpu=plan.cpu,
                memory=plan.memory,
                model_volume=plan.model_volume,
                recipe=plan.recipe,
                **basis,
            )
            return plan, true(r.PLANNED_OK, f"Planned: {plan.summary()}.")
        serving = self._serving(order)
        if in_force is not None and serving and decision.trigger in ("order edit", "class change"):
            out.fields["resolved"] = (prev or Resolved()).model_copy(update=basis)
            return in_force, true(
                r.LAUNCH_PLAN_IN_FORCE,
                f"Recomputing the launch plan after the {decision.trigger} did not succeed ({reason}: {message}); "
                f"the order keeps serving on the plan in force: {in_force.summary()}.",
            )
        if in_force is not None and serving and decision.trigger == "no plan yet":
            # Only reachable when status was lost; never take a serving order down for it.
            return in_force, true(r.LAUNCH_PLAN_IN_FORCE, f"{reason}: {message}")
        out.fields["resolved"] = (prev or Resolved()).model_copy(update=basis)
        return None, false(reason, message)

    def _serving(self, order: InferenceService) -> bool:
        for c in order.status.conditions or []:
            if c.type == r.READY and (c.status == "True" or c.reason == r.SERVICE_UNHEALTHY):
                return True
        return False

    def _pods(self, order: InferenceService) -> list[Obj]:
        return [
            p
            for p in self.store.list("pods", order.metadata.namespace)
            if (p["metadata"].get("labels") or {}).get(names.LABEL_ORDER) == order.metadata.name
        ]

    def _ensure_token(self, order: InferenceService) -> str:
        """The ``<order>-auth`` token: read back when it exists, minted once (256 bits) when not."""
        ns, name = order.metadata.namespace or "", names.auth_secret(order.metadata.name)
        existing = self.store.get("secrets", ns, name)
        if existing is None:
            existing = kapi.get(self.api, "v1", "Secret", namespace=ns, name=name)
        if existing is not None and (existing.get("data") or {}).get(names.AUTH_TOKEN_KEY):
            return base64.b64decode(existing["data"][names.AUTH_TOKEN_KEY]).decode()
        token = secrets.token_urlsafe(32)
        try:
            kapi.create(self.api, render.auth_secret(order, token))
            self.metrics.api_writes.labels(kind="Secret", verb="create").inc()
        except kerr.AlreadyExists:
            again = kapi.get(self.api, "v1", "Secret", namespace=ns, name=name)
            return base64.b64decode((again or {})["data"][names.AUTH_TOKEN_KEY]).decode()
        return token

    def _apply_workload(
        self, order: InferenceService, raw: Obj, plan: LaunchPlan, cspec: Any, revision: str | None
    ) -> None:
        desired = render.workload(order, plan, cspec, self.settings, revision=revision)
        ns = order.metadata.namespace or ""
        self.applied_plans.pop((ns, order.metadata.name), None)
        for obj in desired:
            h = names.short_hash(_stable_json(obj), 16)
            obj["metadata"].setdefault("annotations", {})[APPLIED_HASH] = h
            live = self._live(obj)
            if live is not None and (live["metadata"].get("annotations") or {}).get(APPLIED_HASH) == h:
                edited = drift.drifted(obj, live)
                if edited is None:
                    continue  # already applied exactly this, and nobody changed it since: no write
                what = f"{obj['kind']} {obj['metadata']['name']}"
                log.info("%s/%s: %s was changed; restoring it", ns, what, edited)
                self._event(raw, "Warning", "DriftCorrected", f"{what}: {edited} was changed; restored it.")
            log.info("apply %s %s/%s", obj["kind"], ns, obj["metadata"]["name"])
            kapi.apply(self.api, obj, field_manager=names.FIELD_MANAGER)
            self.metrics.api_writes.labels(kind=obj["kind"], verb="apply").inc()
        self.applied_plans[(ns, order.metadata.name)] = plan
        # Owned objects that the plan no longer wants: an Ingress after External -> ClusterLocal,
        # ResourceClaimTemplates and model volumes of earlier plans (a claim template's spec is
        # immutable and a volume cannot shrink, so each plan has its own). A volume still mounted by
        # old pods is kept by its protection finalizer until they are gone.
        wanted = {(o["kind"], o["metadata"]["name"]) for o in desired}
        for cache, kind, api_version in (
            ("ingresses", "Ingress", "networking.k8s.io/v1"),
            ("claimtemplates", "ResourceClaimTemplate", "resource.k8s.io/v1"),
            ("pvcs", "PersistentVolumeClaim", "v1"),
        ):
            for live in self.store.list(cache, ns):
                meta = live["metadata"]
                if (meta.get("labels") or {}).get(names.LABEL_ORDER) != order.metadata.name:
                    continue
                if (kind, meta["name"]) in wanted or not _owned_by(live, order):
                    continue
                kapi.delete(self.api, api_version, kind, namespace=ns, name=meta["name"])
                self.metrics.api_writes.labels(kind=kind, verb="delete").inc()

    def _live(self, obj: Obj) -> Obj | None:
        cache = _CACHE_OF_KIND.get(obj["kind"])
        if cache is None:
            return None
        return self.store.get(cache, obj["metadata"].get("namespace"), obj["metadata"]["name"])

    def _probe(
        self, order: InferenceService, url: str, token: str | None, now: float
    ) -> tuple[Verdict, float]:
        key = (order.metadata.namespace or "", order.metadata.name)
        state = self.probes.setdefault(key, ProbeState())
        was_ready = self._serving(order)
        period = self.settings.probe_period_seconds
        first_period = min(period, 5.0)
        due = state.result is None or now - state.last >= (period if was_ready else first_period)
        if due:
            result = self.prober.probe(url, token)
            self.metrics.probes.labels(outcome="success" if result.ok else "failure").inc()
            state.last = now
            if result.ok:
                state.failures = 0
                state.result = true(r.SERVING, f"The Inference API answers: {result.detail}")
            else:
                state.failures += 1
                if not was_ready:
                    state.result = false(
                        r.HEALTH_CHECK_FAILED, f"The first probe has not succeeded yet: {result.detail}"
                    )
                elif state.failures >= self.settings.probe_failure_threshold:
                    state.result = false(
                        r.SERVICE_UNHEALTHY,
                        f"{state.failures} consecutive probes failed (threshold "
                        f"{self.settings.probe_failure_threshold}): {result.detail}",
                    )
                else:
                    state.result = true(
                        r.SERVING,
                        f"The Inference API answers; the last probe failed ({state.failures} of "
                        f"{self.settings.probe_failure_threshold} before unhealthy): {result.detail}",
                    )
        assert state.result is not None
        wait = (period if state.result.ok and was_ready else first_period) - (now - state.last)
        return state.result, max(0.5, wait)

    # ------------------------------------------------------------ status

    def _write_status(self, order: InferenceService, raw: Obj, outcome: _Outcome, now: float) -> None:
        stamp = datetime.fromtimestamp(now, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        fields = StatusFields(**outcome.fields)
        new = build_status(order, outcome.verdicts, fields, now=stamp)
        if not status_changed(order.status, new):
            return
        stored = kapi.patch_status(
            self.api,
            "ai.deckhouse.io/v1alpha1",
            "InferenceService",
            namespace=order.metadata.namespace or "",
            name=order.metadata.name,
            status=merge_patch(order.status.to_wire(), new.to_wire()),
            resource_version=raw["metadata"]["resourceVersion"],
        )
        self.metrics.api_writes.labels(kind="InferenceService", verb="status").inc()
        rv = stored.get("metadata", {}).get("resourceVersion")
        if rv:
            self.written[(order.metadata.namespace or "", order.metadata.name)] = rv
        for t in transitions(order.status, new):
            self._event(raw, t.type, t.reason, t.message)

    def _event(self, raw: Obj, type_: str, reason: str, message: str) -> None:
        """An Event on the order; best effort (a failure is logged, never raised)."""
        try:
            kapi.create_event(
                self.api,
                raw,
                type_=type_,
                reason=reason,
                message=message,
                reporting_controller=names.FIELD_MANAGER,
                action="Reconcile",
            )
        except kerr.KubeError as e:
            meta = raw["metadata"]
            log.info("event for %s/%s not recorded: %s", meta.get("namespace"), meta["name"], e)

    # ---------------------------------------------------------------- class

    def reconcile_class(self, name: str) -> float | None:
        raw = self.store.get("classes", None, name)
        if raw is None:
            return None
        try:
            klass = InferenceServiceClass.model_validate(raw)
        except ValidationError:
            return None
        spec = klass.spec
        v = resolve.class_readiness(
            spec,
            recipe_names=[x["metadata"]["name"] for x in self.store.list("recipes")],
            device_class_names=[x["metadata"]["name"] for x in self.store.list("deviceclasses")],
            selector_error=selector_error(spec.placement.selector) if spec.placement.selector else None,
        )
        stamp = datetime.fromtimestamp(self.clock(), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        old = klass.status
        conditions = set_condition(
            old.conditions, r.READY, v, generation=klass.metadata.generation, now=stamp
        )
        new = old.model_copy(
            update={"conditions": conditions, "observed_generation": klass.metadata.generation}
        )
        if new.to_wire() == old.to_wire():
            return None
        kapi.patch_status(
            self.api,
            "ai.deckhouse.io/v1alpha1",
            "InferenceServiceClass",
            namespace=None,
            name=name,
            status=new.to_wire(),
            resource_version=raw["metadata"]["resourceVersion"],
        )
        self.metrics.api_writes.labels(kind="InferenceServiceClass", verb="status").inc()
        return None


APPLIED_HASH = "ai.deckhouse.io/applied-hash"
_CACHE_OF_KIND = {
    "Deployment": "deployments",
    "Service": "services",
    "HorizontalPodAutoscaler": "hpas",
    "PersistentVolumeClaim": "pvcs",
    "Ingress": "ingresses",
    "ResourceClaimTemplate": "claimtemplates",
    "Certificate": "certificates",
}


@dataclass
class _Outcome:
    verdicts: dict[str, Verdict] = field(default_factory=dict)
    fields: dict[str, Any] = field(default_factory=dict)
    requeue: float | None = None
    stale: bool = False  # the caches disagree with our own last write: decide nothing now


def _older(cached: str | None, written: str | None) -> bool:
    """Whether the cached object predates our own last write. resourceVersions are opaque in the API
    contract; every supported storage (etcd) hands out increasing integers, and anything else is
    treated as "not older", which only costs an unneeded recomputation."""
    if not cached or not written:
        return False
    try:
        return int(cached) < int(written)
    except ValueError:
        return False


def _same_place(plan: LaunchPlan, resolved: Resolved) -> bool:
    """Whether the plan is the one status.resolved records (a status without a plan agrees with any)."""
    if resolved.device_class is None:
        return True
    return (plan.device_class, plan.product_name, plan.accelerator_count, plan.sharing_mode) == (
        resolved.device_class,
        resolved.accelerator_product_name,
        resolved.accelerator_count,
        resolved.sharing_mode,
    )


def _owned_by(obj: Obj, order: InferenceService) -> bool:
    return any(ref.get("uid") == order.metadata.uid for ref in obj["metadata"].get("ownerReferences") or [])


def _stable_json(obj: Obj) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))
