"""When the plan is recomputed and how replanCount moves."""

from __future__ import annotations

import pytest

from controller.conditions.replan import decide_plan
from shared.api.order import Resolved

BASIS = Resolved(order_generation=1, class_generation=1, replan_count=0)


@pytest.mark.parametrize(
    ("name", "previous", "in_force", "order_gen", "class_gen", "stuck", "expect"),
    [
        ("a new order is planned, not replanned", None, False, 1, 1, None, (True, False, ())),
        ("a steady order is not replanned (restart, resync)", BASIS, True, 1, 1, None, (False, False, ())),
        ("an edit of the order is a replan", BASIS, True, 2, 1, None, (True, True, ())),
        ("a class policy change is a replan", BASIS, True, 1, 2, None, (True, True, ())),
        ("an edit before any plan held is not counted", BASIS, False, 2, 1, None, (True, False, ())),
        ("a failed first plan is retried without counting", BASIS, False, 1, 1, None, (True, False, ())),
        (
            "a claim stuck past the grace falls back to the next device class",
            BASIS,
            True,
            1,
            1,
            "gpu.nvidia.com",
            (True, True, ("gpu.nvidia.com",)),
        ),
        (
            "a device class already tried is not counted twice",
            Resolved(order_generation=1, class_generation=1, tried_device_classes=["gpu.nvidia.com"]),
            True,
            1,
            1,
            "gpu.nvidia.com",
            (False, False, ("gpu.nvidia.com",)),
        ),
        (
            "an edit forgets the device classes tried",
            Resolved(order_generation=1, class_generation=1, tried_device_classes=["gpu.nvidia.com"]),
            True,
            2,
            1,
            None,
            (True, True, ()),
        ),
    ],
)
def test_decide_plan(
    name: str,
    previous: Resolved | None,
    in_force: bool,
    order_gen: int,
    class_gen: int,
    stuck: str | None,
    expect: tuple[bool, bool, tuple[str, ...]],
) -> None:
    d = decide_plan(
        previous,
        has_plan_in_force=in_force,
        order_generation=order_gen,
        class_generation=class_gen,
        stuck_device_class=stuck,
    )
    assert (d.compute, d.count, d.tried) == expect, name
