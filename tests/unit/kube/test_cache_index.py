"""The informer cache's label index: ``labelled`` returns what a full scan would, after every kind
of change (add, relabel, delete, relist)."""

from __future__ import annotations

from typing import Any

from controller.kube.cache import Cache

L = "ai.deckhouse.io/inference-service"


def obj(name: str, ns: str, order: str | None, rv: str = "1") -> dict[str, Any]:
    labels = {L: order} if order else {}
    return {"metadata": {"name": name, "namespace": ns, "labels": labels, "resourceVersion": rv}}


def names(objs: list[dict[str, Any]]) -> list[str]:
    return [o["metadata"]["name"] for o in objs]


def test_the_index_follows_adds_relabels_deletes_and_relists() -> None:
    c = Cache(L)
    c.apply("ADDED", obj("a", "ns", "o1"))
    c.apply("ADDED", obj("b", "ns", "o1"))
    c.apply("ADDED", obj("c", "other", "o1"))
    assert names(c.labelled("ns", "o1")) == ["a", "b"]
    c.apply("MODIFIED", obj("b", "ns", "o2", rv="2"))
    assert names(c.labelled("ns", "o1")) == ["a"]
    assert names(c.labelled("ns", "o2")) == ["b"]
    c.apply("DELETED", obj("a", "ns", "o1"))
    assert c.labelled("ns", "o1") == []
    c.replace([obj("x", "ns", "o1"), obj("b", "ns", "o2", rv="2")])
    assert names(c.labelled("ns", "o1")) == ["x"]
    assert names(c.labelled("other", "o1")) == []
