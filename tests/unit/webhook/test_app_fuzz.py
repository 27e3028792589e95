"""Random and mutated AdmissionReview bodies never get a 5xx, nor hang (hypothesis, over ASGI)."""

from __future__ import annotations

import asyncio
import copy
import json
from typing import Any

import httpx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shared.cel import selector_error
from testkit.webhook import make_catalog_order, make_class, make_order, make_recipe, make_review
from webhook.app import create_app
from webhook.handlers import ROUTES

APP = create_app()
# celpy raises the recursion limit (to 2500) each time shared.cel builds an environment; do it once
# before hypothesis starts, or it sees the limit change during a test and warns (an error here).
selector_error("true")
PATHS = [r.path for r in ROUTES]
HANG_GUARD_SECONDS = 30.0  # a guard against a hang, not a performance assertion

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=20,
)
SEEDS = [
    make_review(make_order()),
    make_review(make_catalog_order(), operation="UPDATE"),
    make_review(make_class()),
    make_review(make_recipe()),
    make_review(None, operation="DELETE"),
]


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(node, dict):
        for k, v in node.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += _paths(v, (*prefix, i))
    return out


@st.composite
def mutated_reviews(draw: st.DrawFn) -> dict[str, Any]:
    review: dict[str, Any] = copy.deepcopy(draw(st.sampled_from(SEEDS)))
    for _ in range(draw(st.integers(1, 4))):
        paths = [p for p in _paths(review) if p]
        if not paths:  # everything was deleted already
            break
        path = draw(st.sampled_from(paths))
        parent: Any = review
        for part in path[:-1]:
            parent = parent[part]
        if draw(st.booleans()) and isinstance(parent, dict):
            del parent[path[-1]]
        else:
            parent[path[-1]] = draw(json_values)
    return review


async def _post(path: str, content: bytes) -> httpx.Response:
    transport = httpx.ASGITransport(app=APP)
    async with httpx.AsyncClient(transport=transport, base_url="https://webhook") as client:
        return await asyncio.wait_for(client.post(path, content=content), HANG_GUARD_SECONDS)


def answer(path: str, content: bytes) -> httpx.Response:
    return asyncio.run(_post(path, content))


def _check(res: httpx.Response, sent: Any) -> None:
    assert res.status_code in (200, 400), res.text
    if res.status_code == 200:
        response = res.json()["response"]
        assert response["uid"] == sent["request"]["uid"]
        assert isinstance(response["allowed"], bool)
        assert response.get("status", {}).get("code") not in (500, 403), (
            "a handler raised instead of deciding"
        )


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(path=st.sampled_from(PATHS), review=mutated_reviews())
def test_a_mutated_review_never_gets_a_server_error(path: str, review: dict[str, Any]) -> None:
    res = answer(path, json.dumps(review).encode())
    if res.status_code == 200:
        _check(res, review)
    else:
        assert res.status_code == 400
        assert res.json()["message"]


@settings(max_examples=100, deadline=None)
@given(path=st.sampled_from(PATHS), payload=json_values)
def test_a_random_json_body_never_gets_a_server_error(path: str, payload: Any) -> None:
    res = answer(path, json.dumps(payload).encode())
    assert res.status_code == 400
    assert res.json()["message"]


@settings(max_examples=100, deadline=None)
@given(path=st.sampled_from(PATHS), content=st.binary(max_size=200))
def test_random_bytes_never_get_a_server_error(path: str, content: bytes) -> None:
    assert answer(path, content).status_code == 400


@settings(max_examples=300, deadline=None)
@given(path=st.sampled_from(PATHS), spec=st.dictionaries(st.text(max_size=12), json_values, max_size=6))
def test_a_random_spec_is_answered_with_a_decision_and_no_validator_raises(
    path: str, spec: dict[str, Any]
) -> None:
    route = next(r for r in ROUTES if r.path == path)
    review = make_review({"spec": spec, "metadata": {"name": "x"}}, kind=route.kind)
    res = answer(path, json.dumps(review).encode())
    assert res.status_code == 200
    _check(res, review)
