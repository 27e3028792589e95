"""desired: the workload objects an order's plan wants, and which of them to apply. Pure.

Each rendered object carries the applied-hash annotation, a digest of its canonical JSON; a live
object with the same hash is applied again only when someone edited it (``controller.live.drift``).
Rendering and hashing the workload on every reconcile was a quarter of the controller's CPU, and
their inputs seldom change, so both results are memoized. The memo never changes an answer:

- what was rendered (each object's kind, name and applied hash, not the objects) is reused only
  for the same order (namespace, name, uid) when each input it was rendered from is the same
  object or has the same JSON: the order's spec, the plan, the class spec, the settings and the
  fetch;
- "not drifted" is reused only for the same live object version (uid and resourceVersion, both
  set) and the same applied hash; a drift found is never remembered;
- an object to apply or to check for drift is rendered afresh, so nothing a caller does to an
  intent can change what a later reconcile applies.

Both memos are bounded (the least recently used entry goes first) and locked: workers share them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from controller import render
from controller.caching.memo import Memo
from controller.intents import Delete
from controller.kinds import PRUNED
from controller.live import drift, zero
from controller.planner import LaunchPlan
from controller.snapshot import Snapshot
from shared import names
from shared.api.inference_class import InferenceServiceClassSpec

APPLIED_HASH = "ai.deckhouse.io/applied-hash"
LEGACY_AUTOSCALER = "HorizontalPodAutoscaler"  # rendered before KEDA; only pruned now
RENDERED_ENTRIES = 4096  # orders whose workload is remembered
CLEAN_ENTRIES = 32768  # live object versions remembered as not drifted

Obj = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Wanted:
    """What the plan wants done: objects to apply (copies), drift events, owned objects to prune,
    and the (apiVersion, kind, name) of every object of the plan (``controller.live.takeover``)."""

    apply: tuple[Obj, ...]
    events: tuple[tuple[str, str, str], ...]
    delete: tuple[Delete, ...]
    names: tuple[tuple[str, str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class _Rendered:
    inputs: tuple[object, ...]  # what it was rendered from
    prints: tuple[object, ...]  # their JSON (pydantic models) or themselves (compared by value)
    summary: tuple[tuple[str, str, str], ...]  # (kind, name, applied hash) of each object, in order
    versions: tuple[str, ...]  # the apiVersion of each object


_RENDERED: Memo[tuple[str, str, str], _Rendered] = Memo(RENDERED_ENTRIES)
_CLEAN: Memo[tuple[str, str, str], bool] = Memo(CLEAN_ENTRIES)


def clear() -> None:
    """Forget everything remembered (tests)."""
    _RENDERED.clear()
    _CLEAN.clear()


def wanted(
    s: Snapshot, plan: LaunchPlan, cspec: InferenceServiceClassSpec, fetch: render.FetchSpec
) -> Wanted:
    """What to apply (only what changed or drifted) and what to prune (owned, unwanted by the plan).

    The memo keeps, per order, only the kind, name and applied hash of each object (a rendered
    workload is about 25 KB in memory): the objects are rendered again only when one of them must
    be applied or checked for drift, so a steady order costs a lookup and a few comparisons."""
    rendered, objs = _summary(s, plan, cspec, fetch)
    summary = rendered.summary
    apply: list[Obj] = []
    events: list[tuple[str, str, str]] = []
    for i, (kind, name, applied_hash) in enumerate(summary):
        live = s.live(kind, name)
        same = (
            live is not None and (live["metadata"].get("annotations") or {}).get(APPLIED_HASH) == applied_hash
        )
        if same and live is not None and _known_clean(live, applied_hash):
            continue  # already applied exactly this, and nobody changed it since
        objs = objs if objs is not None else _render(s, plan, cspec, fetch)
        one = objs[i]
        obj = render.keep_volume_fields(one, live) if kind == "PersistentVolumeClaim" else one
        if same and live is not None:
            edited = drift.drifted(obj, live)
            if edited is None:
                _remember_clean(live, applied_hash)
                continue
            events.append(("Warning", "DriftCorrected", f"{kind} {name}: {edited} was changed; restored it."))
        apply.append(obj)
    wanted_names = {(kind, name) for kind, name, _ in summary}
    pruned = {k.kind: k.api_version for k in PRUNED}
    delete: list[Delete] = []
    for live in s.owned:
        kind, meta = str(live.get("kind")), live["metadata"]
        if kind not in pruned or (kind, meta["name"]) in wanted_names or not owned_by(live, s):
            continue
        delete.append(Delete(pruned[kind], kind, meta["name"]))
    if any(d.kind == LEGACY_AUTOSCALER for d in delete):
        # KEDA's admission webhook refuses a ScaledObject whose Deployment another HPA already
        # scales: the HPA the controller applied before KEDA goes in this pass, the ScaledObject
        # in the next (its deletion reconciles the order).
        apply = [o for o in apply if o["kind"] != "ScaledObject"]
    objects = tuple((v, k, n) for v, (k, n, _) in zip(rendered.versions, summary, strict=True))
    return Wanted(tuple(apply), tuple(events), tuple(delete), objects)


def remember(
    s: Snapshot, plan: LaunchPlan, cspec: InferenceServiceClassSpec, fetch: render.FetchSpec
) -> None:
    """Render (memoized) what the plan wants without deciding anything: the next observe reads
    its names (``last_names``), so the pass after a new order's first applies at once."""
    _summary(s, plan, cspec, fetch)


def last_names(order: tuple[str, str, str]) -> tuple[tuple[str, str, str], ...]:
    """(apiVersion, kind, name) of what the last render for the order (namespace, name, uid)
    wanted; empty when none is remembered. Observe reads these names (``controller.live.takeover``)."""
    hit = _RENDERED.get(order)
    if hit is None:
        return ()
    return tuple((v, k, n) for v, (k, n, _) in zip(hit.versions, hit.summary, strict=True))


def _summary(
    s: Snapshot, plan: LaunchPlan, cspec: InferenceServiceClassSpec, fetch: render.FetchSpec
) -> tuple[_Rendered, list[Obj] | None]:
    """The (kind, name, applied hash) of each object the plan wants (memoized), and the objects
    when they had to be rendered for it (None on a memo hit)."""
    order = s.order
    key = (order.metadata.namespace or "", order.metadata.name, order.metadata.uid or "")
    inputs: tuple[object, ...] = (
        order.spec,
        plan,
        cspec,
        s.settings,
        fetch,
        token_hash(s, cspec),
        activator_for(s, plan, cspec),
        may_idle(s),
    )
    hit = _RENDERED.get(key)
    if hit is not None:
        # an input that is the very object rendered from keeps its print; only the others are dumped
        prints = tuple(
            p if a is b else _print(a) for a, b, p in zip(inputs, hit.inputs, hit.prints, strict=True)
        )
        if prints == hit.prints:
            if any(a is not b for a, b in zip(inputs, hit.inputs, strict=True)):
                hit = _Rendered(inputs, prints, hit.summary, hit.versions)  # the next reconcile's are these
                _RENDERED.put(key, hit)
            return hit, None
    else:
        prints = tuple(_print(x) for x in inputs)
    objs = _render(s, plan, cspec, fetch)
    summary = tuple(
        (str(o["kind"]), str(o["metadata"]["name"]), str(o["metadata"]["annotations"][APPLIED_HASH]))
        for o in objs
    )
    rendered = _Rendered(inputs, prints, summary, tuple(str(o["apiVersion"]) for o in objs))
    _RENDERED.put(key, rendered)
    return rendered, objs


def _render(
    s: Snapshot, plan: LaunchPlan, cspec: InferenceServiceClassSpec, fetch: render.FetchSpec
) -> list[Obj]:
    """The workload rendered afresh (the caller's own objects), each annotated with its applied hash."""
    objs = render.workload(
        s.order,
        plan,
        cspec,
        s.settings,
        revision=fetch.revision,
        fetch=fetch,
        token_hash=token_hash(s, cspec),
        activator=activator_for(s, plan, cspec),
        may_idle=may_idle(s),
    )
    for obj in objs:
        # the digest is of the object without its own annotation (the right side is evaluated first)
        obj["metadata"].setdefault("annotations", {})[APPLIED_HASH] = names.short_hash(
            drift.stable_json(obj), 16
        )
    return objs


def activator_for(
    s: Snapshot, plan: LaunchPlan, cspec: InferenceServiceClassSpec
) -> render.ActivatorTarget | None:
    """Where the order's ``<order>-activator`` EndpointSlice points, while it has one: a class that
    scales to zero, a single-node plan, no available replica, a ready activator
    (``controller.live.zero``). Unwanted otherwise, so pruned: once a replica is available the
    order's traffic goes to its pods only."""
    wanted = zero.wants_activator(
        s.deployment,
        may_scale_to_zero=render.scale_to_zero_after(cspec) is not None,
        single_node=plan.node_count <= 1,
    )
    return s.activator if wanted else None


def may_idle(s: Snapshot) -> bool:
    """Whether the order's ScaledObject may take it to zero: it has served once (its WorkloadReady
    is True, or a replica is available now, which a status read a moment too early may not show
    yet: the two together keep the ScaledObject from flapping while the status catches up)."""
    return zero.has_served(s.order.status.conditions) or zero.available(s.deployment) >= 1


def token_hash(s: Snapshot, cspec: InferenceServiceClassSpec) -> str | None:
    """A digest of the order's token for its pod template (never the token itself), when it has one."""
    if s.token is None or not render.requires_token(cspec):
        return None
    return names.short_hash(s.token, 16)


def owned_by(obj: dict[str, object] | dict[str, dict[str, object]], s: Snapshot) -> bool:
    meta = obj["metadata"]
    assert isinstance(meta, dict)
    refs = meta.get("ownerReferences") or []
    assert isinstance(refs, list)
    return any(ref.get("uid") == s.order.metadata.uid for ref in refs)


def _clean_key(live: Obj, applied_hash: str) -> tuple[str, str, str] | None:
    meta = live["metadata"]
    uid, version = meta.get("uid"), meta.get("resourceVersion")
    return (str(uid), str(version), applied_hash) if uid and version else None


def _known_clean(live: Obj, applied_hash: str) -> bool:
    key = _clean_key(live, applied_hash)
    return key is not None and bool(_CLEAN.get(key))


def _remember_clean(live: Obj, applied_hash: str) -> None:
    key = _clean_key(live, applied_hash)
    if key is not None:
        _CLEAN.put(key, True)


def _print(x: object) -> object:
    dump = getattr(x, "model_dump_json", None)
    return (type(x), dump()) if dump is not None else x
