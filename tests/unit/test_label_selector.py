"""Label selectors (``shared.label_selector``): Kubernetes' matching semantics and syntax, pure."""

from __future__ import annotations

from typing import Any

import pytest

from shared.label_selector import problems, selects

NS = {"kubernetes.io/metadata.name": "support", "team": "support", "tier": "gold"}


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        pytest.param(None, True, id="unset selects every namespace"),
        pytest.param({}, True, id="an empty selector selects everything"),
        pytest.param({"matchLabels": {"team": "support"}}, True, id="matchLabels equal"),
        pytest.param(
            {"matchLabels": {"team": "support", "tier": "silver"}}, False, id="every pair must hold"
        ),
        pytest.param({"matchLabels": {"absent": ""}}, False, id="an empty value still needs the key"),
        pytest.param(
            {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["gold"]}]}, True, id="In"
        ),
        pytest.param(
            {"matchExpressions": [{"key": "absent", "operator": "In", "values": ["x"]}]},
            False,
            id="In, key absent",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["gold"]}]},
            False,
            id="NotIn",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "absent", "operator": "NotIn", "values": ["x"]}]},
            True,
            id="NotIn holds when the key is absent",
        ),
        pytest.param({"matchExpressions": [{"key": "team", "operator": "Exists"}]}, True, id="Exists"),
        pytest.param(
            {"matchExpressions": [{"key": "team", "operator": "DoesNotExist"}]}, False, id="DoesNotExist"
        ),
        pytest.param(
            {
                "matchLabels": {"team": "support"},
                "matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}],
            },
            False,
            id="labels and expressions must all hold",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "tier", "operator": "In", "values": []}]},
            False,
            id="a broken selector selects nothing",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "team", "operator": "Equals"}]}, False, id="unknown operator"
        ),
    ],
)
def test_selects(selector: Any, expected: bool) -> None:
    assert selects(selector, NS) is expected


@pytest.mark.parametrize(
    ("selector", "found"),
    [
        pytest.param({"matchLabels": {"team": "support"}}, [], id="valid"),
        pytest.param(
            {"matchLabels": {"bad key!": "x"}},
            [(("matchLabels", "bad key!"), 'the key must be a label key, not "bad key!"')],
            id="a label key",
        ),
        pytest.param(
            {"matchLabels": {"team": "-bad"}},
            [(("matchLabels", "team"), 'must be a label value, not "-bad"')],
            id="a label value",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "team", "operator": "In"}]},
            [(("matchExpressions", 0, "values"), "must list at least one value when `operator` is `In`")],
            id="In without values",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "team", "operator": "Exists", "values": ["a"]}]},
            [(("matchExpressions", 0, "values"), "must be empty when `operator` is `Exists`")],
            id="Exists with values",
        ),
        pytest.param(
            {"matchExpressions": [{"key": "team", "operator": "Equals"}]},
            [
                (
                    ("matchExpressions", 0, "operator"),
                    'must be one of `In`, `NotIn`, `Exists` or `DoesNotExist`, not "Equals"',
                )
            ],
            id="an unknown operator",
        ),
        pytest.param(
            "team=support", [((), 'must be an object (a label selector), not "team=support"')], id="a string"
        ),
    ],
)
def test_problems_name_the_path(selector: Any, found: list[Any]) -> None:
    assert problems(selector) == found
