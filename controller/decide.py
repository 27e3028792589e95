"""decide: from one snapshot (and the ledger's planning answer) to intents. Pure.

The chain runs in the order of the conditions: class, model, plan, workload, probe, scaling.
Every verdict is judged from what the snapshot observed now. A serving order (a plan in force
whose workload runs) keeps serving through failures that do not touch its workload: its class
deleted or not Ready, or its model's source unavailable. It reports them on their own condition,
and the conditions after them are still judged (``Intents.advisory``).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from controller import desired, lapse, planning, render
from controller.conditions import resolve
from controller.conditions.status import StatusFields
from controller.intents import Delete, Intents, ProbeRequest, ScrapeRequest
from controller.live import lineage, progress, takeover, zero
from controller.live import workload as readings
from controller.planner import LaunchPlan
from controller.snapshot import Planning, Snapshot
from shared import names
from shared import reasons as r
from shared.api.order import Constraints, Endpoint, ResolvedModel
from shared.conditions import Verdict, false, find, true, unknown

APPLIED_HASH = desired.APPLIED_HASH
# Model reasons whose cause is outside the cluster's watches: looked at again after these seconds.
# The user's Hub token Secret is read by name, never watched (only the order's own Secrets are
# cached), so a Secret created or fixed later is seen within seconds.
_LOOK_AGAIN = {
    r.MODEL_SOURCE_UNAVAILABLE: 10.0,
    r.AUTH_SECRET_NOT_FOUND: 5.0,
    r.MODEL_ACCESS_DENIED: 30.0,
    r.MODEL_NOT_FOUND: 60.0,
}
Obj = dict[str, object]


@dataclass
class _Draft:
    verdicts: dict[str, Verdict] = field(default_factory=dict)
    fields: dict[str, object] = field(default_factory=dict)
    apply: list[dict[str, object]] = field(default_factory=list)
    delete: list[Delete] = field(default_factory=list)
    events: list[tuple[str, str, str]] = field(default_factory=list)
    advisory: set[str] = field(default_factory=set)
    requeue: float | None = None
    probe: ProbeRequest | None = None
    scrape: ScrapeRequest | None = None
    mint_token: bool = False
    plan: LaunchPlan | None = None
    waiting: bool = False

    def again(self, seconds: float) -> None:
        self.requeue = seconds if self.requeue is None else min(self.requeue, seconds)

    def done(self) -> Intents:
        return Intents(
            verdicts=dict(self.verdicts),
            fields=StatusFields(**self.fields),  # type: ignore[arg-type]
            apply=tuple(self.apply),
            delete=tuple(self.delete),
            events=tuple(self.events),
            advisory=frozenset(self.advisory),
            requeue=self.requeue,
            probe=self.probe,
            scrape=self.scrape,
            mint_token=self.mint_token,
            plan=self.plan,
            waiting=self.waiting,
        )


def decide(s: Snapshot, p: Planning) -> Intents:
    intents = _decide(s, p)
    if not p.evict:
        return intents
    return replace(
        intents,
        evict=p.evict,
        requeue=min(intents.requeue, PREEMPT_AGAIN) if intents.requeue is not None else PREEMPT_AGAIN,
    )


PREEMPT_AGAIN = 5.0  # seconds: look again while the replicas the plan preempts are still there


def _decide(s: Snapshot, p: Planning) -> Intents:
    d = _Draft()
    serving = planning.workload_runs(s)
    v = resolve.class_verdict(
        s.order.spec.inference_service_class_name, s.klass, recipe_names=[x.metadata.name for x in s.recipes]
    )
    d.verdicts[r.CLASS_RESOLVED] = v
    if not v.ok or s.klass is None:
        if serving:
            _serve_through(s, d, r.CLASS_RESOLVED, v)
        return d.done()
    cspec = s.klass.spec
    lo, hi, prio = render.replica_bounds(cspec)
    policy = render.scaling_policy(cspec)
    d.fields["constraints"] = Constraints(
        min_replicas=lo, max_replicas=hi, priority_class_name=prio, metric=policy.metric, target=policy.target
    )

    m = s.model
    assert m is not None
    d.verdicts[r.MODEL_RESOLVED] = m.verdict
    if m.facts is not None:
        d.fields["model"] = ResolvedModel(
            endpoint_type=m.endpoint_type,
            architecture=m.facts.architecture,
            format=m.facts.format,
            quantization=m.facts.quantization_label,
            parameter_count=m.facts.parameter_count,
            context_length=m.facts.serving_context,  # as served: an ST model's max_seq_length caps it
            revision=m.facts.revision,
        )
    if not m.verdict.ok or m.facts is None or m.endpoint_type is None:
        wait = m.look_again or _LOOK_AGAIN.get(m.verdict.reason)
        if wait is not None:
            d.again(wait)
        if serving:
            _serve_through(s, d, r.MODEL_RESOLVED, m.verdict)
        return d.done()

    pv = planning.planned(s, p)
    d.verdicts[r.PLANNED] = pv.verdict
    d.fields["resolved"] = pv.resolved
    d.waiting = pv.waiting
    if pv.plan is None:
        d.again(30.0)
        return d.done()
    d.plan = pv.plan
    if p.trigger == "model revision" and p.outcome is not None and p.outcome.ok:
        old = s.order.status.model.revision if s.order.status.model else None
        d.events.append(
            (
                "Normal",
                "ModelRevisionChanged",
                f"{s.order.spec.model.ref.name} moved from {old} to "
                f"{m.facts.revision}; rolling out the new revision (followModelRevisions is on).",
            )
        )
    endpoint = render.endpoint_for(s.order, cspec, s.settings)
    token_needed = render.requires_token(cspec)
    first = pv.render and planned_first(s, p)
    fetch = render.fetch_spec(m.facts, m.facts.revision)
    if first:  # this pass writes Planned; the next one reads the names, applies and mints
        desired.remember(s, pv.plan, cspec, fetch)
        d.again(0.0)
    w = desired.wanted(s, pv.plan, cspec, fetch) if pv.render and not first else None
    mint = token_needed and not s.has_token
    held = takeover.judge(s.order, w.names if w else (), token=mint, live=s.live, held=s.held)
    if held is not None:  # a name is not free (nothing is written), or not read yet
        d.again(held.wait)
        if held.verdict is not None:
            d.verdicts[r.WORKLOAD_READY] = held.verdict
            return d.done()
    elif w is not None and mint:
        d.again(1.0)  # the token is minted in this pass; the workload follows with its digest
    elif w is not None:
        d.apply.extend(w.apply)
        d.events.extend(w.events)
        d.delete.extend(w.delete)
    d.mint_token = mint and not first and held is None
    d.fields["endpoint"] = Endpoint(url=endpoint.url, type=endpoint.type)
    if token_needed:
        d.fields["auth_secret_name"] = names.auth_secret(s.order.metadata.name)
    else:
        d.fields["clear_auth_secret_name"] = True
    _adopt_tls_secret(s, d)
    _judge_workload(s, d, s.token if token_needed else None)
    return d.done()


def planned_first(s: Snapshot, p: Planning) -> bool:
    """A new order's first plan is written (Planned=True, WorkloadReady=Unknown/Progressing) before
    its workload is applied, and the order is queued again at once to apply it.

    The plan's answer then costs a worker one status write, not the workload's applies too (a
    Service's apply waits on its ClusterIP allocation: 2 s on average at 2,000 orders), so with the
    queue's urgent lane every new order is planned in seconds while the applies follow. The
    reservation holds the place in between, and a process that dies in between plans again."""
    return s.plan_in_force is None and p.outcome is not None and p.outcome.ok


def _serve_through(s: Snapshot, d: _Draft, failed: str, v: Verdict) -> None:
    """The order serves on its plan in force: report ``failed`` and keep judging the workload."""
    assert s.plan_in_force is not None
    d.advisory.add(failed)
    if failed == r.CLASS_RESOLVED:
        d.advisory.add(r.MODEL_RESOLVED)
        d.verdicts[r.MODEL_RESOLVED] = unknown(
            r.AWAITING, "Waiting for the class; the model in force is kept."
        )
    d.verdicts[r.PLANNED] = true(
        r.LAUNCH_PLAN_IN_FORCE,
        f"{failed} is False ({v.reason}); the order keeps serving on the plan in force: "
        f"{s.plan_in_force.summary()}.",
    )
    d.plan = s.plan_in_force
    endpoint = s.order.status.endpoint
    if endpoint is None and s.klass is not None:  # a status restored without its fields
        found = render.endpoint_for(s.order, s.klass.spec, s.settings)
        endpoint = Endpoint(url=found.url, type=found.type)
        d.fields["endpoint"] = endpoint
    if endpoint is not None:
        _judge_workload(s, d, s.token)


def _judge_workload(s: Snapshot, d: _Draft, token: str | None) -> None:
    v = readings.workload_verdict(s.deployment, list(s.pods))
    if not v.ok and v.reason == r.PROGRESSING:
        v = _download_progress(s, d, v)
    v, lapses_in = lapse.judge(s, v)
    if _judge_zero(s, d, v):
        return
    d.verdicts[r.WORKLOAD_READY] = v
    _woke(s, d, v)
    if lapses_in is not None:
        d.again(lapses_in)
    if not v.ok:
        since = planning.stuck_since(s)
        d.again(max(1.0, since + s.settings.claim_grace_seconds - s.now) if since is not None else 15.0)
        return
    d.verdicts[r.READY] = _probe(s, d, token)
    _judge_scaling(s, d)


def _judge_scaling(s: Snapshot, d: _Draft) -> None:
    sv, again = readings.scaling_verdict(
        s.deployment,
        s.hpa,
        list(s.pods),
        now=s.now,
        grace=s.settings.scale_up_grace_seconds,
        room=s.capacity.room,
    )
    d.verdicts[r.SCALING_HEALTHY] = sv
    if again is not None:
        d.again(again)


ZERO_LOOK_AGAIN = 15.0  # seconds: an order at zero or waking is looked at again (KEDA moves it)


def _judge_zero(s: Snapshot, d: _Draft, plain: Verdict) -> bool:
    """An order at zero or waking (``controller.live.zero``): WorkloadReady and Ready read
    ``ScaledToZero`` and nothing is probed. The probe goes through the order's Service, so at zero
    it would reach the activator, be held as a request, and wake the order it looks at. Returns
    whether it judged the order."""
    idle = render.scale_to_zero_after(s.klass.spec) if s.klass is not None else None
    before = find(s.order.status.conditions, r.WORKLOAD_READY)
    has_served = zero.has_served(s.order.status.conditions)
    v = zero.zero_verdict(s.deployment, list(s.pods), plain, idle_after=idle, has_served=has_served)
    if v is None:
        return False
    d.verdicts[r.WORKLOAD_READY] = v
    d.again(ZERO_LOOK_AGAIN)
    if s.activator is None:
        d.verdicts[r.READY] = false(
            r.ACTIVATOR_UNAVAILABLE,
            f"The order runs no ready replica and no activator is ready to hold its requests (the Service "
            f"{names.ACTIVATOR_SERVICE} in the module's namespace has no ready endpoint): its endpoint "
            "does not answer until one is.",
        )
    else:
        d.verdicts[r.READY] = true(
            r.SCALED_TO_ZERO,
            "The endpoint answers through the activator, which holds requests with the order's token "
            "until a replica is ready; the Inference API is probed again once one is.",
        )
    if zero.at_zero(s.deployment):
        d.verdicts[r.SCALING_HEALTHY] = true(r.SCALING_HEALTHY_OK, "Scaled to zero: no replica is wanted.")
    else:
        _judge_scaling(s, d)
    if (
        before is not None
        and (before.message or "").startswith(zero.AT_ZERO)
        and v.message.startswith(zero.WAKING)
    ):
        d.events.append(
            (
                "Normal",
                "Waking",
                "KEDA scaled the Deployment from 0 replicas: the order's ScaledObject saw a request (one the "
                f"activator holds, or load on the runtime). {v.message}",
            )
        )
    return True


def _woke(s: Snapshot, d: _Draft, v: Verdict) -> None:
    """The Event of an order back from zero: a replica is available again."""
    before = find(s.order.status.conditions, r.WORKLOAD_READY)
    if before is None or before.reason != r.SCALED_TO_ZERO or not v.ok:
        return
    started = [
        t for p in s.pods if (t := readings.parse_time((p.get("metadata") or {}).get("creationTimestamp")))
    ]
    took = f" {int(s.now - min(started))}s after its first pod was created" if started else ""
    d.events.append(
        (
            "Normal",
            "Woke",
            f"A replica is available{took}; requests go to it directly again, no longer through the activator.",
        )
    )


def _download_progress(s: Snapshot, d: _Draft, v: Verdict) -> Verdict:
    """While a pod's fetcher runs: ask for a scrape when one is due, and say how far the download
    is when the progress book has a fresh record of that pod (``controller.live.progress``). Only the
    pods of the order's own workload are scraped (``controller.live.lineage``)."""
    own = lineage.own_workload_uid(s.deployment, s.order.metadata.uid)
    pod = progress.fetching_pod(lineage.own_pods(s.pods, own, s.links))
    if pod is None:
        return v
    record = s.fetch_progress
    due = progress.scrape_due(record, pod, s.now)
    d.scrape = ScrapeRequest(pod=pod.name, address=pod.address(), due=due)
    # a scrape's answer reconciles the order; the next one is due a period after the last
    d.again(
        progress.SCRAPE_PERIOD
        if due or record.in_flight
        else max(0.5, progress.SCRAPE_PERIOD - (s.now - record.at))
    )
    message = progress.message_for(record, pod, s.now)
    return v if message is None else Verdict(v.status, v.reason, message)


def was_ready(s: Snapshot) -> bool:
    for c in s.order.status.conditions or []:
        if c.type == r.READY and (c.status == "True" or c.reason == r.SERVICE_UNHEALTHY):
            return True
    return False


def _probe(s: Snapshot, d: _Draft, token: str | None) -> Verdict:
    """Ready from the probe book's record; asks for a probe of the in-cluster name when one is due."""
    st, st_ready = s.probe, was_ready(s)
    period = s.settings.probe_period_seconds
    wait_for = period if st_ready and st.ok else min(period, 5.0)
    due = st.ok is None or s.now - st.at >= wait_for
    if due and not st.in_flight:
        d.probe = ProbeRequest(url=render.probe_url(s.order), token=token)
    d.again(max(0.5, wait_for - (s.now - st.at)) if not due else wait_for)
    threshold = s.settings.probe_failure_threshold
    if st.ok is None:
        # A new process has no probe record yet: a serving order keeps its verdict until the first
        # probe answers (a restart writes nothing), and only a never-probed order awaits it.
        prev = find(s.order.status.conditions, r.READY)
        if st_ready and prev is not None and prev.observed_generation == s.order.metadata.generation:
            return Verdict(prev.status, prev.reason, prev.message or "")
        return unknown(r.AWAITING, "Waiting for the first probe of the Inference API.")
    if st.ok:
        return true(r.SERVING, f"The Inference API answers: {st.detail}")
    if not st_ready:
        return false(r.HEALTH_CHECK_FAILED, f"The first probe has not succeeded yet: {st.detail}")
    if st.failures >= threshold:
        return false(
            r.SERVICE_UNHEALTHY,
            f"{st.failures} consecutive probes failed (threshold {threshold}): {st.detail}",
        )
    return true(
        r.SERVING,
        f"The Inference API answers; the last probe failed ({st.failures} of {threshold} before unhealthy): "
        f"{st.detail}",
    )


def _adopt_tls_secret(s: Snapshot, d: _Draft) -> None:
    """cert-manager creates ``<order>-tls`` (it holds a private key); the order adopts it, so
    deleting the order deletes it. Only the ownerReference is applied; cert-manager keeps the data."""
    name = names.tls_secret(s.order.metadata.name)
    live = s.live("Secret", name)
    if live is None or desired.owned_by(live, s):
        return
    d.apply.append(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {
                "name": name,
                "namespace": s.order.metadata.namespace,
                "ownerReferences": [{**render.owner_reference(s.order), "controller": False}],
            },
        }
    )
