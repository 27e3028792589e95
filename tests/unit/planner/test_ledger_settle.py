"""Settling a reservation: when the scheduler allocated the order's claim on other devices than the
ones reserved (a plan names a product, not a device), the reserved ones are free again and the
ledger says capacity grew, so orders waiting for room are tried again."""

from __future__ import annotations

from typing import Any

from controller.planner.inventory import DeviceKey
from controller.planner.ledger import Ledger, Use
from devtools.cluster import fleet

Obj = dict[str, Any]
ORDER = ("team", "chat")


def ledger() -> Ledger:
    led = Ledger()
    objs = fleet.default_fleet()
    for o in objs:
        if o["kind"] == "DeviceClass":
            led.on_device_class(o)
    for o in objs:
        if o["kind"] == "ResourceSlice":
            led.on_slice(o)
    return led


def h100(i: int) -> DeviceKey:
    return ("gpu.nvidia.com", "gpu-h100-0", f"gpu-{i}")


def claim(name: str, key: DeviceKey) -> Obj:
    return {
        "metadata": {"namespace": ORDER[0], "name": name},
        "status": {
            "allocation": {"devices": {"results": [{"driver": key[0], "pool": key[1], "device": key[2]}]}}
        },
    }


def reserve(led: Ledger, key: DeviceKey) -> None:
    led.take(ORDER, (), lambda inventory: ("plan-1", Use(whole=frozenset({key}))))


def test_settling_on_other_devices_than_reserved_frees_the_reserved_ones() -> None:
    led = ledger()
    reserve(led, h100(0))
    led.on_claim(claim("chat-gpu-abc", h100(5)))
    before = led.epoch
    led.settle(ORDER)
    assert led.epoch == before + 1
    assert led.reserved(ORDER) is None
    assert h100(0) not in led.view(("other", "o")).allocated


def test_settling_on_the_reserved_devices_frees_nothing() -> None:
    led = ledger()
    reserve(led, h100(0))
    led.on_claim(claim("chat-gpu-abc", h100(0)))
    before = led.epoch
    led.settle(ORDER)
    assert led.epoch == before
    assert led.reserved(ORDER) is None


def test_settling_without_a_reservation_changes_nothing() -> None:
    led = ledger()
    before = led.epoch
    led.settle(ORDER)
    assert led.epoch == before
