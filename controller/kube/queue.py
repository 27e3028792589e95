"""The work queue between the informers' events and the reconcile workers (client-go's rate-limited
delaying queue, in one class).

- A key is queued at most once; a key added while a worker holds it is queued again after ``done``,
  so one key is never processed twice at once and the last change is never lost.
- ``add_rate_limited`` requeues after the larger of a per-key exponential backoff (``base_delay`` *
  2^failures, capped at ``max_delay``) and the wait of an overall token bucket (``qps``, ``burst``);
  ``forget`` resets the key's backoff after a success.
- ``add_after`` schedules a key; the earliest schedule wins.
- ``add(key, urgent=True)`` queues a key that is not queued yet ahead of every ordinary key (FIFO
  among urgent keys): a new order's plan is answered at once even when thousands of other orders'
  workloads wait to be applied, as controller-runtime's priority queue puts fresh events ahead of
  the backlog. An urgent key that a worker holds goes to the front when it is done.

Time comes from the injected ``clock``, so tests drive it by hand. No I/O.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections import deque
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)


class TokenBucket:
    """Go's ``rate.Limiter`` reservation: each call takes a token and says how long to wait for it."""

    def __init__(self, *, qps: float, burst: int, now: float) -> None:
        self.qps = qps
        self.burst = burst
        self.tokens = float(burst)
        self.last = now

    def reserve(self, now: float) -> float:
        if now > self.last:
            self.tokens = min(float(self.burst), self.tokens + (now - self.last) * self.qps)
            self.last = now
        self.tokens -= 1.0
        return 0.0 if self.tokens >= 0 else -self.tokens / self.qps


class WorkQueue(Generic[K]):
    def __init__(
        self,
        *,
        base_delay: float = 0.005,
        max_delay: float = 1000.0,
        qps: float = 10.0,
        burst: int = 100,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._clock = clock
        self._base_delay = base_delay
        self._max_delay = max_delay
        self._bucket = TokenBucket(qps=qps, burst=burst, now=clock())
        self._cond = threading.Condition()
        self._queue: deque[K] = deque()
        self._front: deque[K] = deque()  # urgent keys, handed out before any key of ``_queue``
        self._urgent: set[K] = set()  # held keys added as urgent: they go to the front when done
        self._dirty: set[K] = set()  # queued, or to be queued again after done
        self._processing: set[K] = set()
        self._waiting: list[tuple[float, int, K]] = []  # heap of (ready at, seq, key)
        self._ready_at: dict[K, float] = {}
        self._seq = itertools.count()
        self._failures: dict[K, int] = {}
        self._shutting_down = False

    # ---------------------------------------------------------------- adding

    def add(self, key: K, *, urgent: bool = False) -> None:
        """Queue ``key`` (once). ``urgent``: ahead of the ordinary keys, unless it is queued already."""
        with self._cond:
            self._add(key, urgent=urgent)

    def _add(self, key: K, *, urgent: bool = False) -> None:
        if self._shutting_down or key in self._dirty:
            return
        self._dirty.add(key)
        if key in self._processing:
            if urgent:
                self._urgent.add(key)
            return
        (self._front if urgent else self._queue).append(key)
        self._cond.notify()

    def add_after(self, key: K, seconds: float) -> None:
        """Add ``key`` once ``seconds`` have passed; an earlier schedule of the same key wins."""
        with self._cond:
            if self._shutting_down:
                return
            if seconds <= 0:
                self._add(key)
                return
            at = self._clock() + seconds
            if key in self._ready_at and self._ready_at[key] <= at:
                return
            self._ready_at[key] = at
            heapq.heappush(self._waiting, (at, next(self._seq), key))
            self._cond.notify()

    def add_rate_limited(self, key: K) -> None:
        """Requeue ``key`` after its backoff (which this call doubles) and the token bucket's wait."""
        with self._cond:
            failures = self._failures.get(key, 0)
            self._failures[key] = failures + 1
        self.add_after(key, self._delay(failures))

    def _delay(self, failures: int) -> float:
        per_key = min(self._max_delay, self._base_delay * 2.0 ** min(failures, 64))
        with self._cond:
            overall = self._bucket.reserve(self._clock())
        return max(per_key, overall)

    def forget(self, key: K) -> None:
        with self._cond:
            self._failures.pop(key, None)

    def num_requeues(self, key: K) -> int:
        with self._cond:
            return self._failures.get(key, 0)

    # -------------------------------------------------------------- taking

    def _promote(self, now: float) -> float | None:
        """Move due keys into the queue; return when the next one is due."""
        while self._waiting:
            at, _, key = self._waiting[0]
            if self._ready_at.get(key) != at:  # superseded by an earlier schedule, or already promoted
                heapq.heappop(self._waiting)
                continue
            if at > now:
                return at
            heapq.heappop(self._waiting)
            del self._ready_at[key]
            self._add(key)
        return None

    def get(self, timeout: float | None = None) -> K | None:
        """The next key, marked as being processed until ``done``. ``None`` on shutdown, or when
        ``timeout`` seconds pass with nothing to hand out."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while True:
                if self._shutting_down:
                    return None
                next_at = self._promote(self._clock())
                if self._front or self._queue:
                    key = (self._front or self._queue).popleft()
                    self._processing.add(key)
                    self._dirty.discard(key)
                    return key
                wait = None if next_at is None else max(0.0, next_at - self._clock())
                if deadline is not None:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        return None
                    wait = left if wait is None else min(wait, left)
                self._cond.wait(wait)

    def done(self, key: K) -> None:
        """The worker finished ``key``; if it was added meanwhile, it is queued again now."""
        with self._cond:
            self._processing.discard(key)
            urgent = key in self._urgent
            self._urgent.discard(key)
            if key in self._dirty and not self._shutting_down:
                (self._front if urgent else self._queue).append(key)
                self._cond.notify()

    # ---------------------------------------------------------- lifecycle

    def shutdown(self) -> None:
        """Stop handing out keys: every ``get`` returns ``None`` from now on; adds are ignored."""
        with self._cond:
            self._shutting_down = True
            self._cond.notify_all()

    @property
    def shutting_down(self) -> bool:
        with self._cond:
            return self._shutting_down

    def __len__(self) -> int:
        """Depth: keys ready to be handed out (scheduled ones count once they are due)."""
        with self._cond:
            self._promote(self._clock())
            return len(self._front) + len(self._queue)

    def waiting(self) -> int:
        """Keys scheduled for later."""
        with self._cond:
            return len(self._ready_at)
