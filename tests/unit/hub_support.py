"""What the Hub client tests share: the mirror fixtures, a fake clock, a client on both."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from controller.modelhub.client import HubClient
from standins.hub_mirror import RunningMirror, start_mirror

QWEN_7B = "Qwen/Qwen2.5-7B-Instruct"  # 4 shards: info + config + index + 4 ranges = 7 requests
LLAMA_8B = "meta-llama/Llama-3.1-8B-Instruct"  # gated, 4 shards


class Clock:
    """Monotonic seconds that only move when told or slept."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


@pytest.fixture(scope="module")
def mirror() -> Iterator[RunningMirror]:
    with start_mirror() as m:
        yield m


@pytest.fixture
def hub_mirror(mirror: RunningMirror) -> Iterator[RunningMirror]:
    mirror.clear_faults()
    mirror.clear_requests()
    yield mirror
    mirror.clear_faults()


def make_client(mirror: RunningMirror, **changes: Any) -> HubClient:
    clock = changes.pop("clock", None) or Clock()
    args: dict[str, Any] = {"endpoint": mirror.url, "timeout": 10.0, "clock": clock}
    args.update(changes)
    return HubClient(**args)
