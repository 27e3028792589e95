"""Whose token is in the ``<order>-auth`` Secret (controller.live.auth_token)."""

from __future__ import annotations

import base64
from typing import Any

from controller.live.auth_token import AuthReading, read_auth


def secret(owner_uid: str | None, token: str | None = "tok", version: str = "41") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "chat-auth", "uid": "s-1", "resourceVersion": version}
    if owner_uid is not None:
        meta["ownerReferences"] = [
            {"apiVersion": "ai.deckhouse.io/v1alpha1", "kind": "InferenceService", "name": "chat",
             "uid": owner_uid, "controller": True},
        ]  # fmt: skip
    data = {"token": base64.b64encode(token.encode()).decode()} if token else {}
    return {"metadata": meta, "data": data}


def test_the_orders_own_secret_gives_its_token() -> None:
    assert read_auth(secret("o-2"), "o-2") == AuthReading("tok")


def test_no_secret_is_no_token() -> None:
    assert read_auth(None, "o-2") == AuthReading(None)
    assert read_auth(secret("o-2", token=None), "o-2") == AuthReading(None)


def test_a_secret_of_a_previous_order_of_the_name_is_stale_and_its_token_is_not_used() -> None:
    assert read_auth(secret("o-1", version="77"), "o-2") == AuthReading(None, stale_version="77")


def test_a_secret_no_order_controls_is_stale() -> None:
    assert read_auth(secret(None, version="77"), "o-2") == AuthReading(None, stale_version="77")
