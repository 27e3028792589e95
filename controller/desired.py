"""desired: the workload objects an order's plan wants, and which of them to apply. Pure.

Each rendered object carries the applied-hash annotation, a digest of its canonical JSON; a live
object with the same hash is applied again only when someone edited it (``controller.drift``).
Rendering and hashing the workload on every reconcile was a quarter of the controller's CPU, and
their inputs seldom change, so both results are memoized. The memo never changes an answer:

- a rendered workload is reused only for the same order (namespace, name, uid) when each input it
  was rendered from is the same object or has the same JSON: the order's spec, the plan, the class
  spec, the settings and the fetch;
- "not drifted" is reused only for the same live object version (uid and resourceVersion, both
  set) and the same applied hash; a drift found is never remembered;
- the memo's objects are never handed out: what is applied is a copy of them, so nothing a caller
  does to an intent can change what a later reconcile applies.

Both memos are bounded (the least recently used entry goes first) and locked: workers share them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from controller import drift, render
from controller.intents import Delete
from controller.kinds import PRUNED
from controller.memo import Memo
from controller.planner import LaunchPlan
from controller.snapshot import Snapshot
from shared import names
from shared.api.inference_class import InferenceServiceClassSpec

APPLIED_HASH = "ai.deckhouse.io/applied-hash"
RENDERED_ENTRIES = 4096  # orders whose workload is remembered
CLEAN_ENTRIES = 32768  # live object versions remembered as not drifted

Obj = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Wanted:
    """What the plan wants done: objects to apply (copies), drift events, owned objects to prune."""

    apply: tuple[Obj, ...]
    events: tuple[tuple[str, str, str], ...]
    delete: tuple[Delete, ...]


@dataclass(frozen=True, slots=True)
class _Rendered:
    inputs: tuple[object, ...]  # what it was rendered from
    prints: tuple[object, ...]  # their JSON (pydantic models) or themselves (compared by value)
    objs: tuple[Obj, ...]  # annotated with their applied hash; never handed out


_RENDERED: Memo[tuple[str, str, str], _Rendered] = Memo(RENDERED_ENTRIES)
_CLEAN: Memo[tuple[str, str, str], bool] = Memo(CLEAN_ENTRIES)


def clear() -> None:
    """Forget everything remembered (tests)."""
    _RENDERED.clear()
    _CLEAN.clear()


def wanted(
    s: Snapshot, plan: LaunchPlan, cspec: InferenceServiceClassSpec, fetch: render.FetchSpec
) -> Wanted:
    """What to apply (only what changed or drifted) and what to prune (owned, unwanted by the plan)."""
    desired = rendered(s, plan, cspec, fetch)
    apply: list[Obj] = []
    events: list[tuple[str, str, str]] = []
    for one in desired:
        meta = one["metadata"]
        applied_hash = meta["annotations"][APPLIED_HASH]
        live = s.live(one["kind"], meta["name"])
        obj = render.keep_volume_fields(one, live) if one["kind"] == "PersistentVolumeClaim" else one
        if live is not None and (live["metadata"].get("annotations") or {}).get(APPLIED_HASH) == applied_hash:
            edited = _drifted(obj, live, applied_hash)
            if edited is None:
                continue  # already applied exactly this, and nobody changed it since
            what = f"{obj['kind']} {meta['name']}"
            events.append(("Warning", "DriftCorrected", f"{what}: {edited} was changed; restored it."))
        apply.append(_copy(obj))
    wanted_names = {(o["kind"], o["metadata"]["name"]) for o in desired}
    pruned = {k.kind: k.api_version for k in PRUNED}
    delete: list[Delete] = []
    for live in s.owned:
        kind, meta = str(live.get("kind")), live["metadata"]
        if kind not in pruned or (kind, meta["name"]) in wanted_names or not owned_by(live, s):
            continue
        delete.append(Delete(pruned[kind], kind, meta["name"]))
    return Wanted(tuple(apply), tuple(events), tuple(delete))


def rendered(
    s: Snapshot, plan: LaunchPlan, cspec: InferenceServiceClassSpec, fetch: render.FetchSpec
) -> tuple[Obj, ...]:
    """The order's workload for the plan, each object annotated with its applied hash (memoized;
    the objects returned are the memo's own: read them, never change them)."""
    order = s.order
    key = (order.metadata.namespace or "", order.metadata.name, order.metadata.uid or "")
    inputs: tuple[object, ...] = (order.spec, plan, cspec, s.settings, fetch)
    hit = _RENDERED.get(key)
    if hit is not None:
        # an input that is the very object rendered from keeps its print; only the others are dumped
        prints = tuple(
            p if a is b else _print(a) for a, b, p in zip(inputs, hit.inputs, hit.prints, strict=True)
        )
        if prints == hit.prints:
            if any(a is not b for a, b in zip(inputs, hit.inputs, strict=True)):
                _RENDERED.put(key, _Rendered(inputs, prints, hit.objs))  # the next reconcile's are these
            return hit.objs
    else:
        prints = tuple(_print(x) for x in inputs)
    objs = render.workload(order, plan, cspec, s.settings, revision=fetch.revision, fetch=fetch)
    for obj in objs:
        # the digest is of the object without its own annotation (the right side is evaluated first)
        obj["metadata"].setdefault("annotations", {})[APPLIED_HASH] = names.short_hash(
            drift.stable_json(obj), 16
        )
    entry = _Rendered(inputs, prints, tuple(objs))
    _RENDERED.put(key, entry)
    return entry.objs


def owned_by(obj: dict[str, object] | dict[str, dict[str, object]], s: Snapshot) -> bool:
    meta = obj["metadata"]
    assert isinstance(meta, dict)
    refs = meta.get("ownerReferences") or []
    assert isinstance(refs, list)
    return any(ref.get("uid") == s.order.metadata.uid for ref in refs)


def _drifted(obj: Obj, live: Obj, applied_hash: str) -> str | None:
    meta = live["metadata"]
    uid, version = meta.get("uid"), meta.get("resourceVersion")
    key = (str(uid), str(version), applied_hash) if uid and version else None
    if key is not None and _CLEAN.get(key):
        return None
    edited = drift.drifted(obj, live)
    if edited is None and key is not None:
        _CLEAN.put(key, True)
    return edited


def _print(x: object) -> object:
    dump = getattr(x, "model_dump_json", None)
    return (type(x), dump()) if dump is not None else x


def _copy(obj: Any) -> Any:
    """A deep copy of a JSON-like object (dicts and lists; every other value is immutable)."""
    if isinstance(obj, dict):
        return {k: _copy(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_copy(v) for v in obj]
    return obj
