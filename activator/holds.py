"""Holding a request until its order has a ready upstream, within the bounds.

``Holds.wait`` answers at once when the order already has a ready upstream. Otherwise it counts the
request in the ledger (refused at once beyond the bounds), shows the count in the held gauge (the
wake-up signal), and asks ``Upstreams.ready`` every ``poll`` seconds until an address appears or
the hold bound runs out. Whatever ends the wait (ready, the bound, the caller cancelling because the
client went away), the count and the gauge come back down.

A request is held again (``again=True``) when its forward failed before any answer byte: the
upstream was listed ready but did not take the request (a replica whose readiness was reported
before its server listened, endpoints that lag). It is then counted and shown held even though
addresses are listed, waits ``retry`` seconds and tries the ready addresses again; the bound is the
one the request started with (``since``), so retries never stretch a hold past ``max_hold``.

The hold-time histogram is observed once per request: here for the outcomes that end it (timeout,
refused_full, client_closed), by the caller for ``forwarded`` once a forward opened (``forwarded``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import NoReturn

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
        retry: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._upstreams = upstreams
        self._ledger = ledger
        self._metrics = metrics
        self._max_hold = max_hold
        self._poll = poll
        self._retry = retry
        self._clock = clock

    def held(self, order: OrderKey) -> int:
        return self._ledger.held(order)

    @property
    def total(self) -> int:
        return self._ledger.total

    def now(self) -> float:
        """The clock the bound is measured on (``since`` is a reading of it)."""
        return self._clock()

    def forwarded(self, since: float) -> None:
        """The request held since ``since`` was forwarded: the end of its hold, observed once."""
        self._metrics.hold_ended("forwarded", max(0.0, self._clock() - since))

    async def wait(self, order: OrderKey, *, since: float | None = None, again: bool = False) -> list[str]:
        """The order's ready upstream addresses, once there are any. ``since``: when the request's
        hold began (now by default), the start of its bound; ``again``: its last forward failed
        before any answer, so it is held and the addresses asked again after ``retry`` seconds
        even if some are listed. Raises ``HoldRefusedError`` or ``HoldTimedOutError``; cancelling
        the call releases the hold."""
        start = self._clock() if since is None else since
        ready = [] if again else self._upstreams.ready(order.namespace, order.name)
        if ready:
            return ready
        left = start + self._max_hold - self._clock()
        if left <= 0:
            self._timed_out(start)
        held_before = self._ledger.held(order)
        if not self._ledger.try_hold(order):
            self._metrics.hold_ended("refused_full", max(0.0, self._clock() - start))
            self._metrics.refused("too_many_held")
            raise HoldRefusedError
        if not again and is_wakeup(ready_now=False, held_before=held_before):
            self._metrics.woke(order)
        self._metrics.set_held(order, self._ledger.held(order))
        ended = False
        try:
            async with asyncio.timeout(left):
                if again:
                    await asyncio.sleep(self._retry)
                    ready = self._upstreams.ready(order.namespace, order.name)
                while not ready:
                    await asyncio.sleep(self._poll)
                    ready = self._upstreams.ready(order.namespace, order.name)
            ended = True
            return ready
        except TimeoutError:
            ended = True
            self._timed_out(start)
        finally:
            self._ledger.release(order)
            self._metrics.set_held(order, self._ledger.held(order))
            if not ended:
                self._metrics.hold_ended("client_closed", max(0.0, self._clock() - start))

    def _timed_out(self, start: float) -> NoReturn:
        self._metrics.hold_ended("timeout", max(0.0, self._clock() - start))
        self._metrics.refused("timeout")
        raise HoldTimedOutError from None
