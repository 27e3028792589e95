"""What the probe book recorded for an order's endpoint. Pure data.

``controller.live.probes`` keeps one per order; ``controller.observe`` puts it in the snapshot and
``controller.decide`` judges the Ready condition from it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ProbeState:
    """The probe book's record for the order's endpoint: consecutive failures and the last result."""

    ok: bool | None = None  # None: never probed
    detail: str = ""
    failures: int = 0
    at: float = 0.0  # when the last result arrived
    in_flight: bool = False
