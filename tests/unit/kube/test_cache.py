"""The informer's cache: watch events and relist diffs become the changes handlers see."""

from __future__ import annotations

from typing import Any

from controller.kube.cache import Cache

Obj = dict[str, Any]


def make_obj(name: str = "a", *, namespace: str = "ns", rv: str = "1", **changes: Any) -> Obj:
    obj: Obj = {"metadata": {"name": name, "namespace": namespace, "resourceVersion": rv}, "data": {}}
    obj.update(changes)
    return obj


def test_an_added_object_is_an_addition_with_no_old_copy() -> None:
    cache = Cache()
    new = make_obj()
    assert cache.apply("ADDED", new) == ("ADDED", new, None)
    assert cache.get("ns", "a") is new


def test_a_modified_object_carries_the_copy_it_replaces() -> None:
    cache = Cache()
    old, new = make_obj(rv="1"), make_obj(rv="2")
    cache.apply("ADDED", old)
    assert cache.apply("MODIFIED", new) == ("MODIFIED", new, old)
    assert cache.get("ns", "a") is new


def test_a_deleted_object_leaves_the_cache() -> None:
    cache = Cache()
    old, gone = make_obj(rv="1"), make_obj(rv="2")
    cache.apply("ADDED", old)
    assert cache.apply("DELETED", gone) == ("DELETED", gone, old)
    assert cache.get("ns", "a") is None
    assert len(cache) == 0


def test_deleting_an_unknown_object_changes_nothing() -> None:
    assert Cache().apply("DELETED", make_obj()) is None


def test_cluster_scoped_objects_are_found_with_or_without_a_namespace() -> None:
    cache = Cache()
    obj = {"metadata": {"name": "gpu", "resourceVersion": "1"}}
    cache.apply("ADDED", obj)
    assert cache.get(None, "gpu") is obj
    assert cache.get("", "gpu") is obj


def test_list_filters_by_namespace() -> None:
    cache = Cache()
    for ns, name in (("a", "x"), ("a", "y"), ("b", "x")):
        cache.apply("ADDED", make_obj(name, namespace=ns))
    assert sorted(o["metadata"]["name"] for o in cache.list("a")) == ["x", "y"]
    assert len(cache.list()) == 3
    assert cache.list("c") == []


def test_a_relist_reports_what_changed_during_the_gap() -> None:
    cache = Cache()
    kept, changed, deleted = make_obj("kept"), make_obj("changed", rv="1"), make_obj("deleted")
    for o in (kept, changed, deleted):
        cache.apply("ADDED", o)
    kept_again, changed_now, added = make_obj("kept"), make_obj("changed", rv="5"), make_obj("added", rv="6")
    changes = cache.replace([kept_again, changed_now, added])
    assert changes == [
        ("MODIFIED", changed_now, changed),
        ("ADDED", added, None),
        ("DELETED", deleted, deleted),
    ]
    assert sorted(o["metadata"]["name"] for o in cache.list()) == ["added", "changed", "kept"]


def test_the_first_list_adds_everything() -> None:
    items = [make_obj("a"), make_obj("b")]
    assert Cache().replace(items) == [("ADDED", items[0], None), ("ADDED", items[1], None)]
