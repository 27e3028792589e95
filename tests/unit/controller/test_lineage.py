"""Which pods are the order's own: the controller chain by uid, up to the order's workload."""

from __future__ import annotations

from typing import Any

from controller.live import lineage

Obj = dict[str, Any]


def obj(kind: str, name: str, uid: str, owner: tuple[str, str, str] | None = None) -> Obj:
    refs = [{"kind": owner[0], "name": owner[1], "uid": owner[2], "controller": True}] if owner else []
    return {"kind": kind, "metadata": {"name": name, "uid": uid, "ownerReferences": refs}}


LWS = obj("LeaderWorkerSet", "o-group", "lws", ("InferenceService", "o", "order"))
LEADER_STS = obj("StatefulSet", "o-group", "sts-l", ("LeaderWorkerSet", "o-group", "lws"))
LEADER = obj("Pod", "o-group-0", "pod-l", ("StatefulSet", "o-group", "sts-l"))
WORKER_STS = obj("StatefulSet", "o-group-0", "sts-w", ("Pod", "o-group-0", "pod-l"))
WORKER = obj("Pod", "o-group-0-1", "pod-w", ("StatefulSet", "o-group-0", "sts-w"))
STRAY = obj("Pod", "a", "pod-s", ("StatefulSet", "evil", "sts-e"))
EVIL_STS = obj("StatefulSet", "evil", "sts-e", ("Pod", "a", "pod-s"))  # a loop ends too


def test_leader_and_worker_pods_of_the_orders_group_are_its_own_and_a_stray_is_not() -> None:
    lineage.clear()
    store = {o["metadata"]["name"]: o for o in (LEADER_STS, WORKER_STS, EVIL_STS)}
    asked: list[tuple[str, str]] = []

    def get(kind: str, name: str) -> Obj | None:
        asked.append((kind, name))
        return store.get(name)

    pods = [LEADER, WORKER, STRAY]
    links = lineage.links(pods, pods, get)
    assert lineage.own_workload_uid(LWS, "order") == "lws"
    assert lineage.own_workload_uid(LWS, "another-order") is None
    own = lineage.own_pods(pods, "lws", links)
    assert [p["metadata"]["name"] for p in own] == ["o-group-0", "o-group-0-1"]
    # a link, once read, is remembered: the next pass asks nothing
    asked.clear()
    assert lineage.links(pods, pods, get) == links and asked == []


def test_an_object_of_the_name_with_another_uid_is_no_link() -> None:
    lineage.clear()
    recreated = obj("StatefulSet", "o-group", "sts-new", ("LeaderWorkerSet", "o-group", "lws"))
    links = lineage.links([LEADER], [LEADER], lambda kind, name: recreated)
    assert lineage.own_pods([LEADER], "lws", links) == []
