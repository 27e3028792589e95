"""Holding a request until its order has a ready upstream, within the bounds.

``Holds.wait`` answers at once when the order already has a ready upstream. Otherwise it counts the
request in the ledger (refused at once beyond the bounds), shows the count in the held gauge (the
wake-up signal), and asks ``Upstreams.ready`` every ``poll`` seconds until an address appears or
``max_hold`` runs out. Whatever ends the wait (ready, the bound, the caller cancelling because the
client went away), the count and the gauge come back down.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from activator.hosts import OrderKey
from activator.ledger import HoldLedger, is_wakeup
from activator.metrics import ActivatorMetrics
from activator.sources import Upstreams


class HoldRefusedError(Exception):
    """Too many requests are held already (for the order, or in all)."""


class HoldTimedOutError(Exception):
    """No upstream became ready within ``max_hold`` seconds."""


class Holds:
    def __init__(
        self,
        *,
        upstreams: Upstreams,
        ledger: HoldLedger,
        metrics: ActivatorMetrics,
        max_hold: float,
        poll: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._upstreams = upstreams
        self._ledger = ledger
        self._metrics = metrics
        self._max_hold = max_hold
        self._poll = poll
        self._clock = clock

    def held(self, order: OrderKey) -> int:
        return self._ledger.held(order)

    @property
    def total(self) -> int:
        return self._ledger.total

    async def wait(self, order: OrderKey) -> list[str]:
        """The order's ready upstream addresses, once there are any. Raises ``HoldRefusedError`` or
        ``HoldTimedOutError``; cancelling the call releases the hold."""
        ready = self._upstreams.ready(order.namespace, order.name)
        if ready:
            self._metrics.hold_ended("forwarded", 0.0)
            return ready
        held_before = self._ledger.held(order)
        if not self._ledger.try_hold(order):
            self._metrics.hold_ended("refused_full", 0.0)
            self._metrics.refused("too_many_held")
            raise HoldRefusedError
        if is_wakeup(ready_now=False, held_before=held_before):
            self._metrics.woke(order)
        self._metrics.set_held(order, self._ledger.held(order))
        start = self._clock()
        outcome = "client_closed"
        try:
            async with asyncio.timeout(self._max_hold):
                while not ready:
                    await asyncio.sleep(self._poll)
                    ready = self._upstreams.ready(order.namespace, order.name)
            outcome = "forwarded"
            return ready
        except TimeoutError:
            outcome = "timeout"
            self._metrics.refused("timeout")
            raise HoldTimedOutError from None
        finally:
            self._ledger.release(order)
            self._metrics.set_held(order, self._ledger.held(order))
            self._metrics.hold_ended(outcome, self._clock() - start)
