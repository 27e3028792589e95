"""No import cycles in the activator (as tests/unit/test_import_cycles.py checks the other packages)."""

from __future__ import annotations

import grimp

from tests.unit.test_import_cycles import import_cycles


def test_the_activator_has_no_import_cycle() -> None:
    graph = grimp.build_graph("activator", "shared", cache_dir=None)
    assert "activator.proxy" in graph.modules
    assert import_cycles(graph, ("activator",)) == []
