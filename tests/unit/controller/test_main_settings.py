"""The controller waits for an API server it cannot reach yet at start, instead of crashing."""

from __future__ import annotations

from typing import Any

import pytest

from controller import __main__ as cli
from controller.kube import errors as kerr


def test_an_unreachable_api_server_is_waited_for_then_the_settings_are_read(monkeypatch: Any) -> None:
    answers: list[object] = [kerr.ApiUnavailable("refused", status=0)] * 3 + [
        {"data": {"probePeriodSeconds": "7"}}
    ]
    slept: list[float] = []

    def get(*_a: Any, **_k: Any) -> object:
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    monkeypatch.setattr("controller.kube.apply.get", get)
    settings = cli.load_settings(None, "ns", "s", sleep=slept.append)
    assert settings.probe_period_seconds == 7.0
    assert slept == [1.0, 2.0, 4.0]


def test_it_gives_up_after_the_wait(monkeypatch: Any) -> None:
    def get(*_a: Any, **_k: Any) -> object:
        raise kerr.ApiUnavailable("refused", status=0)

    monkeypatch.setattr("controller.kube.apply.get", get)
    with pytest.raises(kerr.ApiUnavailable):
        cli.load_settings(None, "ns", "s", wait=5.0, sleep=lambda _s: None)
