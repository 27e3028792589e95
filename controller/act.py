"""act: carry out one decision's intents. The only place that writes an order's objects (the
model-facts ConfigMap, a class's status and the Lease are written elsewhere; every write is counted
in ``controller.kube.client``).

Order of writes: the ``<order>-auth`` Secret (minted once), the workload objects (server-side
apply, only those that changed or drifted), the prune, then the status (merge patch on
``/status`` carrying the resourceVersion it was computed from, only when it changed), then Events.
A new order's first plan is written alone, and its workload applied on the next pass
(``decide.planned_first``). A refused apply (a missing API, RBAC, an invalid manifest) is not transient: the status says
``WorkloadFailed`` with the API server's words, and ``status.resolved`` keeps the plan last
applied in full.
"""

from __future__ import annotations

import base64
import contextlib
import logging
import secrets
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from controller import render
from controller.conditions.status import build_status, merge_patch, status_changed, transitions
from controller.intents import Evict, Intents
from controller.kube import apply as kapi
from controller.kube import errors as kerr
from controller.kube.events import EventRecorder
from controller.metrics import ControllerMetrics
from controller.snapshot import Snapshot
from shared import names
from shared import reasons as r
from shared.conditions import false

log = logging.getLogger(__name__)
Obj = dict[str, Any]
PREEMPTING = "Preempting"  # Event on an order whose plan evicted a lower-priority order's replica
PREEMPTED = "Preempted"  # Event on the order whose replica was evicted


@dataclass(frozen=True, slots=True)
class Done:
    """What acting did: whether the workload was applied, and the resourceVersion of our status write."""

    applied: bool
    written_rv: str | None


@dataclass
class Actor:
    api: Any
    metrics: ControllerMetrics
    # Events go through the recorder, off the worker, when there is one (controller/kube/events.py).
    recorder: EventRecorder | None = None

    def act(self, s: Snapshot, intents: Intents) -> Done:
        ns = s.order.metadata.namespace or ""
        applied = True
        try:
            if intents.mint_token:
                self._mint_token(s)
            for obj in intents.apply:
                log.info("apply %s %s/%s", obj["kind"], ns, obj["metadata"]["name"])
                kapi.apply(self.api, obj, field_manager=names.FIELD_MANAGER)
            for d in intents.delete:
                kapi.delete(self.api, d.api_version, d.kind, namespace=ns, name=d.name)
        except (kerr.Invalid, kerr.NotFound, kerr.Forbidden) as e:
            applied = False
            intents = with_apply_failure(s, intents, str(e))
        raw = _regarding(s)
        if applied:
            self._evict(s, intents.evict, raw)
        for type_, reason, message in intents.events:
            self.event(raw, type_, reason, message)
        return Done(applied, self._write_status(s, intents, raw))

    def _evict(self, s: Snapshot, evictions: tuple[Evict, ...], raw: Obj) -> None:
        """Evict the pods of lower-priority orders whose devices this order's plan counts on
        (controller-driven preemption: kube-scheduler does not preempt for DRA devices). Through the
        Eviction API, so PodDisruptionBudgets hold: a 429 leaves the pod, and the next reconcile asks
        again; a pod already gone is nothing to do. An Event on each order when a pod is evicted."""
        me = f"{s.key[0]}/{s.key[1]}"
        for e in evictions:
            try:
                kapi.evict(self.api, namespace=e.namespace, name=e.pod)
            except kerr.NotFound:
                continue
            except kerr.KubeError as err:  # 429 (a PodDisruptionBudget), RBAC, the API server away
                log.info("eviction of pod %s/%s for %s refused: %s", e.namespace, e.pod, me, err)
                continue
            log.info("evicted pod %s/%s of %s for %s", e.namespace, e.pod, e.victim, me)
            self.event(
                raw,
                "Normal",
                PREEMPTING,
                f"Evicted pod {e.pod} (a replica of {e.namespace}/{e.victim}, priority "
                f"{e.victim_priority}): {e.reason}.",
            )
            victim = kapi.get(
                self.api, "ai.deckhouse.io/v1alpha1", "InferenceService", namespace=e.namespace, name=e.victim
            )
            if victim is not None:
                self.event(
                    victim,
                    "Warning",
                    PREEMPTED,
                    f"Replica pod {e.pod} was evicted: {e.reason}.",
                )

    def _mint_token(self, s: Snapshot) -> None:
        """The token is random (256 bits) and minted once; the order's own Secret is never replaced.

        A Secret of the name that a previous order controls (``controller.live.auth_token``) is taken
        over: new token, this order as its owner, conditional on the version observed. No token is
        minted for an order the API server no longer has under this uid (a cache behind a delete
        and create of the name): its Secret would belong to a ghost, and the garbage collector
        would take it away from the new order later."""
        ns, name = s.order.metadata.namespace or "", s.order.metadata.name
        live = kapi.get(self.api, "ai.deckhouse.io/v1alpha1", "InferenceService", namespace=ns, name=name)
        if live is None or live["metadata"].get("uid") != s.order.metadata.uid:
            return
        secret = render.auth_secret(s.order, secrets.token_urlsafe(32))
        if s.stale_auth_version is not None:
            token = secret["stringData"][names.AUTH_TOKEN_KEY]
            try:
                kapi.merge_patch(
                    self.api,
                    "v1",
                    "Secret",
                    namespace=ns,
                    name=secret["metadata"]["name"],
                    body={
                        "metadata": {**secret["metadata"], "resourceVersion": s.stale_auth_version},
                        "data": {names.AUTH_TOKEN_KEY: base64.b64encode(token.encode()).decode()},
                    },
                )  # a Conflict (changed since observed) requeues the order
                return
            except kerr.NotFound:
                pass  # the garbage collector deleted it meanwhile: create the order's own
        with contextlib.suppress(kerr.AlreadyExists):  # another reconcile minted it first; its token stands
            kapi.create(self.api, secret)

    def _write_status(self, s: Snapshot, intents: Intents, raw: Obj) -> str | None:
        stamp = datetime.fromtimestamp(s.now, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        new = build_status(s.order, intents.verdicts, intents.fields, now=stamp, advisory=intents.advisory)
        if not status_changed(s.order.status, new):
            return None
        stored = kapi.patch_status(
            self.api,
            "ai.deckhouse.io/v1alpha1",
            "InferenceService",
            namespace=s.order.metadata.namespace or "",
            name=s.order.metadata.name,
            status=merge_patch(s.order.status.to_wire(), new.to_wire()),
            resource_version=s.resource_version,
        )
        for t in transitions(s.order.status, new):
            self.event(raw, t.type, t.reason, t.message)
        rv = stored.get("metadata", {}).get("resourceVersion")
        return str(rv) if rv else None

    def event(self, raw: Obj, type_: str, reason: str, message: str) -> None:
        """An Event on the order; best effort (a failure is logged, never raised)."""
        if self.recorder is not None:
            self.recorder.emit(raw, type_, reason, message)
        else:
            self.send_event(raw, type_, reason, message)

    def send_event(
        self, raw: Obj, type_: str, reason: str, message: str, now: datetime | None = None
    ) -> None:
        try:
            kapi.create_event(
                self.api,
                raw,
                type_=type_,
                reason=reason,
                message=message,
                reporting_controller=names.FIELD_MANAGER,
                action="Reconcile",
                now=now,
            )
        except kerr.KubeError as e:
            meta = raw["metadata"]
            log.info("event for %s/%s not recorded: %s", meta.get("namespace"), meta["name"], e)


def with_apply_failure(s: Snapshot, intents: Intents, error: str) -> Intents:
    """The intents after the API server refused the workload: WorkloadFailed, plan last applied kept."""
    verdicts = {
        k: v for k, v in intents.verdicts.items() if k in (r.CLASS_RESOLVED, r.MODEL_RESOLVED, r.PLANNED)
    }
    verdicts[r.WORKLOAD_READY] = false(r.WORKLOAD_FAILED, f"Applying the workload failed: {error}")
    fields = replace(intents.fields, resolved=s.order.status.resolved or intents.fields.resolved)
    return replace(intents, verdicts=verdicts, fields=fields, requeue=30.0, plan=None, probe=None)


def _regarding(s: Snapshot) -> Obj:
    return {
        "apiVersion": "ai.deckhouse.io/v1alpha1",
        "kind": "InferenceService",
        "metadata": {
            "name": s.order.metadata.name,
            "namespace": s.order.metadata.namespace,
            "uid": s.order.metadata.uid,
            "resourceVersion": s.resource_version,
        },
    }
