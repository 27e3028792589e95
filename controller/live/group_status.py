"""WorkloadReady of a multi-node order: its LeaderWorkerSet and the pods of its groups. Pure.

A group serves only when every one of its pods is ready: the leader alone answers nothing, since
vLLM's pipeline runs through every node. So the verdict is True only when LWS counts a ready group
(``status.readyReplicas``, which KServe's multi-node never watched, kserve#6043) *and* the pods the
informer sees now agree: every pod of that group present, not being deleted, and Ready. The pods
are read too because LWS's count lags a lost pod; the order is not-Ready from the moment a worker
goes, with a message naming it, and LWS's group restart (``RecreateGroupOnPodRestart``) brings it
back.

Pod names are LWS's: the leader ``<set>-<group>``, the workers ``<set>-<group>-<index>``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from shared import reasons as r
from shared.conditions import Verdict, false, true, unknown

Obj = dict[str, Any]
SET_NAME_LABEL = "leaderworkerset.sigs.k8s.io/name"
GROUP_INDEX_LABEL = "leaderworkerset.sigs.k8s.io/group-index"
WORKER_INDEX_LABEL = "leaderworkerset.sigs.k8s.io/worker-index"


def pod_name(set_name: str, group: int, index: int) -> str:
    return f"{set_name}-{group}" if index == 0 else f"{set_name}-{group}-{index}"


def _ready(pod: Obj) -> bool:
    if pod.get("metadata", {}).get("deletionTimestamp"):
        return False
    conditions = pod.get("status", {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def group_pods(lws: Obj, pods: Sequence[Obj]) -> dict[str, Obj]:
    """The pods of the set, by name."""
    name = lws["metadata"]["name"]
    return {
        p["metadata"]["name"]: p
        for p in pods
        if (p["metadata"].get("labels") or {}).get(SET_NAME_LABEL) == name
    }


def _what(name: str, index: int, pod: Obj | None) -> str:
    role = "leader" if index == 0 else "worker"
    if pod is None:
        return f"{role} pod {name} is missing"
    if pod.get("metadata", {}).get("deletionTimestamp"):
        return f"{role} pod {name} is being deleted"
    phase = pod.get("status", {}).get("phase") or "Pending"
    return f"{role} pod {name} is not ready ({phase})"


def group_verdict(lws: Obj, pods: Sequence[Obj]) -> Verdict:
    """WorkloadReady for a LeaderWorkerSet: True once one whole group is ready."""
    name = lws["metadata"]["name"]
    template = lws.get("spec", {}).get("leaderWorkerTemplate") or {}
    size = int(template.get("size") or 1)
    replicas = int(lws.get("spec", {}).get("replicas") or 1)
    status = lws.get("status") or {}
    by_name = group_pods(lws, pods)
    if not status and not by_name:
        return unknown(r.PROGRESSING, f"The LeaderWorkerSet {name} is being created.")
    lagging: list[str] = []
    whole = []
    for g in range(replicas):
        missing = [
            _what(n, i, by_name.get(n))
            for i in range(size)
            if not _ready(by_name.get(n := pod_name(name, g, i), {}))
        ]
        if missing:
            lagging.append(f"group {g}: " + "; ".join(missing))
        else:
            whole.append(g)
    ready_count = int(status.get("readyReplicas") or 0)
    if whole and ready_count >= 1:
        text = f"{len(whole)} of {replicas} group(s) of {size} pods ready (LeaderWorkerSet {name})."
        return true(r.AVAILABLE, text + (f" Not ready: {lagging[0]}." if lagging else ""))
    if lagging:
        return false(
            r.PROGRESSING,
            f"LeaderWorkerSet {name}: no group has all its {size} pods ready ({lagging[0]}); LWS restarts "
            "a group that lost a pod.",
        )
    return false(r.PROGRESSING, f"Waiting for the LeaderWorkerSet {name} to report its group ready.")
