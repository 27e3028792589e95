"""The figures of ``python -m bench.zero``, from its samples and timed requests. Pure.

- ``device_seconds``: the devices the order held over a window, as the integral of a step function
  sampled at ``Sample.t`` (each sample holds until the next one);
- ``figures``: the time from each wake-up request to its first byte and to its whole answer, the time
  from the last answer to zero, and the device-seconds the idle time saved against an order that
  keeps one replica (``devices_per_replica`` held through the whole window).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Sample:
    t: float  # monotonic seconds
    devices: int  # devices the order's claims held at ``t``


@dataclass(frozen=True)
class Wake:
    status: int | str
    first_byte_s: float
    total_s: float


def device_seconds(samples: Sequence[Sample], *, start: float, end: float) -> float:
    """The integral of the devices held over [start, end]; before the first sample nothing is known,
    so the window starts at the first sample inside it."""
    inside = sorted((s for s in samples if s.t <= end), key=lambda s: s.t)
    if not inside:
        return 0.0
    total = 0.0
    for here, after in zip(inside, [*inside[1:], Sample(end, 0)], strict=True):
        lo, hi = max(here.t, start), min(after.t, end)
        if hi > lo:
            total += here.devices * (hi - lo)
    return total


def figures(
    samples: Sequence[Sample],
    *,
    start: float,
    end: float,
    devices_per_replica: int,
    wakes: Sequence[Wake],
    to_zero_s: Sequence[float],
) -> dict[str, Any]:
    held = device_seconds(samples, start=start, end=end)
    window = end - start
    always_on = devices_per_replica * window
    firsts = [w.first_byte_s for w in wakes if w.status == 200]
    return {
        "window_s": round(window, 1),
        "wakes": len(wakes),
        "wakes_ok": sum(1 for w in wakes if w.status == 200),
        "first_byte_s": [round(w.first_byte_s, 1) for w in wakes],
        "first_byte_median_s": round(statistics.median(firsts), 1) if firsts else None,
        "answer_s": [round(w.total_s, 1) for w in wakes],
        "to_zero_s": [round(t, 1) for t in to_zero_s],
        "device_seconds_held": round(held, 1),
        "device_seconds_always_on": round(always_on, 1),
        "device_seconds_saved": round(always_on - held, 1),
        "saved_share": round((always_on - held) / always_on, 3) if always_on else None,
    }
