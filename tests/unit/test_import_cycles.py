"""No import cycles in the production packages (issue 24): a cycle means two modules cannot be read,
tested or moved apart. Module level, ``TYPE_CHECKING`` imports included (they bind modules too)."""

from __future__ import annotations

import grimp
import pytest

PACKAGES = ("controller", "webhook", "shared")


def import_cycles(graph: grimp.ImportGraph, roots: tuple[str, ...]) -> list[list[str]]:
    """The strongly connected components of more than one module, among modules under ``roots``
    (Tarjan's algorithm, iterative)."""
    modules = sorted(m for m in graph.modules if m.split(".")[0] in roots)
    inside = set(modules)
    edges = {m: sorted(inside & graph.find_modules_directly_imported_by(m)) for m in modules}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in modules:
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            node, i = work.pop()
            if i == 0:
                index[node] = low[node] = len(index)
                stack.append(node)
                on_stack.add(node)
            successors = edges[node]
            if i < len(successors):
                work.append((node, i + 1))
                nxt = successors[i]
                if nxt not in index:
                    work.append((nxt, 0))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            if low[node] == index[node]:
                component = []
                while True:
                    m = stack.pop()
                    on_stack.discard(m)
                    component.append(m)
                    if m == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return found


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return grimp.build_graph(*PACKAGES, cache_dir=None)


def test_production_packages_have_no_import_cycle(graph: grimp.ImportGraph) -> None:
    assert "controller.reconciler" in graph.modules  # the production package, not tests/unit/controller
    assert import_cycles(graph, PACKAGES) == []


def test_a_cycle_is_found() -> None:
    g = grimp.ImportGraph()
    for m in ("p", "p.a", "p.b", "p.c", "p.d"):
        g.add_module(m)
    g.add_import(importer="p.a", imported="p.b")
    g.add_import(importer="p.b", imported="p.c")
    g.add_import(importer="p.c", imported="p.a")
    g.add_import(importer="p.c", imported="p.d")
    assert import_cycles(g, ("p",)) == [["p.a", "p.b", "p.c"]]
