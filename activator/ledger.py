"""How many requests wait for each order, and whether one more may. Pure: no clock, no I/O.

The bounds keep a burst at an idle order (or at many) from holding unbounded memory and sockets:
beyond ``per_order`` waiting for one order, or ``total`` for all, a request is refused at once.
"""

from __future__ import annotations

from activator.hosts import OrderKey


class HoldLedger:
    """Counts of held requests per order and in total, within bounds."""

    def __init__(self, *, per_order: int, total: int) -> None:
        self._per_order = per_order
        self._total = total
        self._held: dict[OrderKey, int] = {}
        self._sum = 0

    def held(self, order: OrderKey) -> int:
        return self._held.get(order, 0)

    @property
    def total(self) -> int:
        return self._sum

    def try_hold(self, order: OrderKey) -> bool:
        """Count one more request held for ``order``; False (nothing counted) when a bound is reached."""
        n = self._held.get(order, 0)
        if n >= self._per_order or self._sum >= self._total:
            return False
        self._held[order] = n + 1
        self._sum += 1
        return True

    def release(self, order: OrderKey) -> None:
        """One held request of ``order`` is no longer waiting."""
        n = self._held.get(order, 0)
        if n <= 0:
            raise ValueError(f"no request of {order} is held")
        if n == 1:
            del self._held[order]
        else:
            self._held[order] = n - 1
        self._sum -= 1


def is_wakeup(*, ready_now: bool, held_before: int) -> bool:
    """Whether a hold that starts now wakes the order: it has no ready upstream and no other request
    was already waiting for one (which woke it before)."""
    return not ready_now and held_before == 0
