"""Which pods the order's own workload controls: the pods the progress scrape may read. Pure.

Any namespace member can create a pod with the order's label and a running ``model-fetcher`` init
container, so the label does not make a pod the order's. A pod counts only when its chain of
controller ownerReferences (by uid) reaches the order's workload, and that workload is controlled
by the order's uid:

- Deployment: pod -> ReplicaSet -> Deployment;
- LeaderWorkerSet: leader pod -> StatefulSet -> LeaderWorkerSet; worker pod -> StatefulSet ->
  leader pod -> StatefulSet -> LeaderWorkerSet.

A pod's own ownerReferences are in the cache; the ReplicaSets and StatefulSets are not (nothing
else needs them), so ``links`` asks for them through ``get``, only for pods whose fetcher runs
(observe's I/O; a ReplicaSet's or StatefulSet's controller seldom changes, so it is remembered
by uid). Kubernetes lets whoever can
create pods write any ownerReference: a forged controller reference to the order's own ReplicaSet
passes. Such a pod is then the ReplicaSet's by Kubernetes' own rules (it counts and deletes it),
and what the scrape reads from it is bounded anyway (``controller.live.bounded_http``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from controller.caching.memo import Memo

Obj = dict[str, Any]
Getter = Callable[[str, str], Obj | None]  # (kind, name) -> the object in the order's namespace
MAX_HOPS = 4  # worker pod -> StatefulSet -> leader pod -> StatefulSet -> LeaderWorkerSet
FETCHED = ("ReplicaSet", "StatefulSet")  # the links not in the controller's caches

_LINKS: Memo[str, str] = Memo(16384)  # uid of a ReplicaSet or StatefulSet -> its controller's uid


def clear() -> None:
    """Forget the links remembered (tests)."""
    _LINKS.clear()


def controller_ref(obj: Obj | None) -> Obj | None:
    refs = ((obj or {}).get("metadata") or {}).get("ownerReferences") or []
    return next((r for r in refs if r.get("controller")), None)


def own_workload_uid(workload: Obj | None, order_uid: str | None) -> str | None:
    """The workload's uid when the order (``order_uid``) controls it, else None."""
    ref = controller_ref(workload)
    if workload is None or ref is None or not order_uid or ref.get("uid") != order_uid:
        return None
    uid = workload["metadata"].get("uid")
    return str(uid) if uid else None


def own_pods(pods: Iterable[Obj], workload_uid: str | None, links: Mapping[str, str]) -> list[Obj]:
    """The pods whose controller chain reaches ``workload_uid``, through ``links`` (uid -> the uid
    of its controller) for what lies between, pods included."""
    if not workload_uid:
        return []
    out = []
    for pod in pods:
        ref = controller_ref(pod)
        uid = ref.get("uid") if ref else None
        for _ in range(MAX_HOPS):
            if uid is None or uid == workload_uid:
                break
            uid = links.get(uid)
        if uid is not None and uid == workload_uid:
            out.append(pod)
    return out


def links(pods: Iterable[Obj], starts: Iterable[Obj], get: Getter) -> dict[str, str]:
    """uid -> controller uid for the chain above each pod of ``starts``: the pods' own links, and
    those of the ReplicaSets and StatefulSets met on the way (fetched through ``get``)."""
    by_uid = {p["metadata"].get("uid"): p for p in pods}
    out = {str(u): str(r["uid"]) for u, p in by_uid.items() if u and (r := controller_ref(p)) is not None}
    for pod in starts:
        ref = controller_ref(pod)
        for _ in range(MAX_HOPS):
            if ref is None or ref.get("kind") not in (*FETCHED, "Pod"):
                break
            uid = str(ref.get("uid"))
            if ref["kind"] == "Pod":
                ref = controller_ref(by_uid.get(uid))
                continue
            known = _LINKS.get(uid)
            if known is None:
                obj = get(str(ref["kind"]), str(ref.get("name")))
                if obj is None or obj["metadata"].get("uid") != uid:
                    break
                above = controller_ref(obj)
                if above is None:
                    break
                known = str(above["uid"])
                _LINKS.put(uid, known)
            out[uid] = known
            ref = {"kind": _kind_of(known, by_uid), "uid": known}
            if ref["kind"] is None:
                break
    return out


def _kind_of(uid: str, pods: Mapping[Any, Obj]) -> str | None:
    """What a controller uid is, as far as the walk goes on: a cached pod (a leader), else nothing."""
    return "Pod" if uid in pods else None
