"""Event mapping and the table of watched kinds."""

from __future__ import annotations

from typing import Any

import pytest

from controller import wiring
from controller.kinds import BY_CACHE, BY_KIND, KINDS, OWNED, PRUNED, Cache, Fanout, cache_of, watched
from controller.store import Store, UnwatchedCacheError


def order(
    name: str, *, reason: str | None = None, prio: str | None = None, created: str = ""
) -> dict[str, Any]:
    status: dict[str, Any] = {}
    if reason:
        status["conditions"] = [{"type": "Planned", "status": "False", "reason": reason}]
    if prio:
        status["constraints"] = {"priorityClassName": prio}
    return {
        "metadata": {"name": name, "namespace": "ns", "creationTimestamp": created},
        "spec": {"inferenceServiceClassName": "c"},
        "status": status,
    }


def test_every_cache_has_exactly_one_row_and_owned_kinds_are_label_selected() -> None:
    assert len({k.cache for k in KINDS}) == len(KINDS) == len(Cache)
    assert all(k.label_selector for k in OWNED)
    assert {k.kind for k in PRUNED} == {
        "PersistentVolumeClaim",
        "Ingress",
        "ResourceClaimTemplate",
        "Deployment",  # replaced by a LeaderWorkerSet when the plan becomes multi-node
        "HorizontalPodAutoscaler",  # only the controller's own of before KEDA (``<order>``)
        "ScaledObject",  # a plan that becomes multi-node has no autoscaler
        "LeaderWorkerSet",
        "NetworkPolicy",  # a group the plan no longer runs, or a plan no longer multi-node
        "EndpointSlice",  # ``<order>-activator`` once the order has a ready replica
    }
    assert cache_of("Deployment") is Cache.DEPLOYMENTS
    assert cache_of("ScaledObject") is Cache.SCALED_OBJECTS
    assert BY_KIND["ScaledObject"].optional, "KEDA may be missing: the start does not wait for it"
    assert cache_of("Pod") is None  # pods are read, never applied
    assert Cache.MODELS not in {k.cache for k in watched(catalog_enabled=False)}
    assert Cache.MODELS in {k.cache for k in watched(catalog_enabled=True)}


def test_an_unwatched_cache_is_an_error_not_an_absent_object() -> None:
    store = Store({})
    with pytest.raises(UnwatchedCacheError):
        store.get(Cache.ORDERS, "ns", "x")


def test_capacity_events_requeue_only_waiting_orders_by_priority_then_age_and_only_when_capacity_grew() -> (
    None
):
    orders = [
        order("ready"),
        order("old-low", reason="NoCapacity", created="2026-01-01T00:00:00Z"),
        order("new-high", reason="NoCapacity", prio="high", created="2026-01-02T00:00:00Z"),
        order("exhausted", reason="ResourceClaimExhausted", created="2026-01-03T00:00:00Z"),
        order("bad", reason="PlacementUndecidable"),
    ]
    claim = {"metadata": {"name": "c", "namespace": "ns"}}
    assert wiring.keys_for(Cache.RESOURCE_CLAIMS, claim, orders, capacity_grew=False) == []
    keys = wiring.keys_for(
        Cache.RESOURCE_CLAIMS, claim, orders, capacity_grew=True, priorities={"high": 1000}
    )
    assert [k[2] for k in keys] == ["new-high", "old-low", "exhausted"]


def test_a_claim_of_an_orders_pod_requeues_that_order_so_its_allocation_settles_the_reservation() -> None:
    claim = {
        "metadata": {
            "name": "o-7f-abc-gpu",
            "namespace": "ns",
            "labels": {"ai.deckhouse.io/inference-service": "o"},
        }
    }
    assert wiring.keys_for(Cache.RESOURCE_CLAIMS, claim, [], capacity_grew=False) == [("order", "ns", "o")]
    waiting = [order("w", reason="NoCapacity")]
    keys = wiring.keys_for(Cache.RESOURCE_CLAIMS, claim, waiting, capacity_grew=True)
    assert keys == [("order", "ns", "w"), ("order", "ns", "o")]


def test_the_waiting_set_follows_each_orders_events() -> None:
    waiting = wiring.WaitingOrders()
    waiting.observe("ADDED", order("a"))
    waiting.observe("ADDED", order("b", reason="NoCapacity"))
    waiting.observe("MODIFIED", order("c", reason="ResourceClaimExhausted"))
    assert sorted(o["metadata"]["name"] for o in waiting.orders()) == ["b", "c"]
    waiting.observe("MODIFIED", order("b", reason="Planned"))  # placed: no longer waiting
    waiting.observe("DELETED", order("c", reason="ResourceClaimExhausted"))
    waiting.observe("MODIFIED", order("a", reason="NoCapacity"))
    assert [o["metadata"]["name"] for o in waiting.orders()] == ["a"]


def _planned(status: str, observed: int | None, generation: int = 2) -> dict[str, Any]:
    o = order("a")
    o["metadata"]["generation"] = generation
    o["status"]["conditions"] = [
        {"type": "Planned", "status": status, "reason": "x", "observedGeneration": observed}
    ]
    return o


def test_an_order_is_unanswered_until_planned_is_judged_for_its_generation() -> None:
    assert wiring.unanswered(order("new"))
    assert wiring.unanswered(_planned("True", observed=1)), "edited since its plan"
    assert wiring.unanswered(_planned("Unknown", observed=2))
    assert not wiring.unanswered(_planned("True", observed=2))
    assert not wiring.unanswered(_planned("False", observed=2)), "NoCapacity is an answer"


def test_owned_objects_map_to_the_order_in_their_label_and_classes_fan_out() -> None:
    pod = {"metadata": {"name": "p", "namespace": "ns", "labels": {"ai.deckhouse.io/inference-service": "o"}}}
    assert wiring.keys_for(Cache.PODS, pod, []) == [("order", "ns", "o")]
    klass = {"metadata": {"name": "c"}}
    assert wiring.keys_for(Cache.CLASSES, klass, [order("a")]) == [("class", "", "c"), ("order", "ns", "a")]
    assert BY_CACHE[Cache.RECIPES].fanout is Fanout.EVERYTHING


def test_a_namespace_event_requeues_the_orders_in_that_namespace_only() -> None:
    """Its labels decide which classes its orders may use (a class's namespaceSelector)."""
    ns = {"metadata": {"name": "ns", "labels": {"gpu": "yes"}}}
    elsewhere = {**order("b"), "metadata": {**order("b")["metadata"], "namespace": "other"}}
    assert wiring.keys_for(Cache.NAMESPACES, ns, [order("a"), elsewhere]) == [("order", "ns", "a")]
