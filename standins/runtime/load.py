"""The load model of the runtime stand-in: each pod of an order is a replica with ``slots`` requests
running at once and a FIFO queue behind them, so that load sent to the stand-in shows as vLLM's own
scheduler numbers (``vllm:num_requests_running`` / ``vllm:num_requests_waiting``) per pod.

This module keeps the books: ``Load.admit`` places a request on a replica and gives a ``Ticket``;
the caller waits for ``ticket.granted`` (a slot), holds it for the decode time (``Load.hold``:
``LoadConfig.decode_seconds`` from the grant, the setting of the moment, so a change applies to the
requests running too) and calls ``Load.finish``, which gives the slot to the first request waiting
on that replica. The stand-in's API handler does exactly that (``standins.runtime.server``).

- Which replica: the least loaded (running + waiting) of the order's ready pods, ties broken round
  robin. A request stays on the replica it was admitted to, even when its pod stops being ready
  meanwhile (a real replica being deleted finishes what it has, with a grace period).
- No ready pod known (no kubeconfig, none registered, or none ready): the order's one implicit
  replica (pod ``None``), so the stand-in still answers as before pods were modelled; its numbers
  are not published for any pod.
- The queue is bounded (``queue_limit`` per replica, 1024 by default). Real vLLM does not refuse a
  request, it queues it without a bound; the stand-in holds a thread and a connection per waiting
  request, so beyond the bound it answers 503 (``admit`` gives None): bounded memory, and an
  overload that is visible rather than a stand-in that falls over.
- ``configure`` changes slots and decode time for every replica at once; more slots grant waiting
  requests at once, fewer let the running ones finish; a shorter decode time ends the running
  requests that have held their slot that long.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field

DEFAULT_SLOTS = 4
DEFAULT_DECODE_SECONDS = 2.0
DEFAULT_QUEUE_LIMIT = 1024


@dataclass(frozen=True, slots=True)
class LoadConfig:
    slots: int = DEFAULT_SLOTS  # requests a replica runs at once (vLLM: its batch, bounded by KV cache)
    decode_seconds: float = DEFAULT_DECODE_SECONDS  # how long a request holds its slot
    queue_limit: int = DEFAULT_QUEUE_LIMIT  # requests waiting per replica before 503

    def __post_init__(self) -> None:
        if self.slots < 1:
            raise ValueError(f"slots must be at least 1, not {self.slots}")
        if not 0 <= self.decode_seconds <= 600:
            raise ValueError(f"decodeSeconds must be in 0..600, not {self.decode_seconds}")
        if self.queue_limit < 0:
            raise ValueError(f"queueLimit must be at least 0, not {self.queue_limit}")


@dataclass(frozen=True, slots=True)
class PodLoad:
    """One replica's numbers, as vLLM's metrics publish them."""

    running: int = 0
    waiting: int = 0
    slots: int = DEFAULT_SLOTS
    success: int = 0  # finished requests (finished_reason "stop": the stand-in always stops)
    prompt_tokens: int = 0
    generation_tokens: int = 0

    @property
    def kv_cache_usage(self) -> float:
        """0..1: the share of the slots in use (each running request holds its share of the cache)."""
        return min(1.0, self.running / self.slots)


@dataclass(eq=False)
class Ticket:
    """One request on one replica; ``granted`` is set once it holds a slot."""

    replica: _Replica
    granted: threading.Event = field(default_factory=threading.Event)

    @property
    def pod(self) -> str | None:
        return self.replica.pod


@dataclass(eq=False)
class _Replica:
    pod: str | None
    running: int = 0
    waiting: deque[Ticket] = field(default_factory=deque)
    success: int = 0
    prompt_tokens: int = 0
    generation_tokens: int = 0

    @property
    def load(self) -> int:
        return self.running + len(self.waiting)


class Load:
    """The replicas of every order the stand-in serves itself; thread safe. Orders are any hashable
    key (the stand-in's ``OrderKey``)."""

    def __init__(self, config: LoadConfig | None = None) -> None:
        self._config = config or LoadConfig()
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)  # notified when the configuration changes
        self._replicas: dict[tuple[Hashable, str | None], _Replica] = {}
        self._turns: dict[Hashable, int] = {}

    @property
    def config(self) -> LoadConfig:
        with self._lock:
            return self._config

    def configure(self, config: LoadConfig) -> None:
        with self._lock:
            self._config = config
            for replica in self._replicas.values():
                self._grant(replica)
            self._changed.notify_all()

    def hold(self, since: float) -> None:
        """Return once the decode time has passed since ``since`` (``time.monotonic()`` of the grant),
        the decode time being the configured one of each moment."""
        with self._changed:
            while (left := since + self._config.decode_seconds - time.monotonic()) > 0:
                self._changed.wait(left)

    def admit(self, order: Hashable, ready_pods: Sequence[str]) -> Ticket | None:
        """Place a request of ``order`` on the least loaded of ``ready_pods`` (the implicit replica
        when there is none); None when that replica's queue is full. The ticket is granted at once
        when a slot is free and nobody waits before it."""
        pods: list[str | None] = list(dict.fromkeys(ready_pods)) or [None]
        with self._lock:
            turn = self._turns.get(order, 0)
            self._turns[order] = turn + 1
            rotated = pods[turn % len(pods) :] + pods[: turn % len(pods)]
            replica = min((self._replica(order, p) for p in rotated), key=lambda r: r.load)
            ticket = Ticket(replica)
            if replica.running < self._config.slots and not replica.waiting:
                replica.running += 1
                ticket.granted.set()
            elif len(replica.waiting) >= self._config.queue_limit:
                return None
            else:
                replica.waiting.append(ticket)
            return ticket

    def finish(self, ticket: Ticket, *, prompt_tokens: int = 0, generation_tokens: int = 0) -> None:
        """The request is answered: its slot goes to the first request waiting on its replica."""
        with self._lock:
            replica = ticket.replica
            replica.running -= 1
            replica.success += 1
            replica.prompt_tokens += prompt_tokens
            replica.generation_tokens += generation_tokens
            self._grant(replica)

    def abandon(self, ticket: Ticket) -> None:
        """The request ends unanswered (an error while it waited or ran): its place is given up and
        it is not counted as a success."""
        with self._lock:
            replica = ticket.replica
            if ticket.granted.is_set():
                replica.running -= 1
            else:
                replica.waiting.remove(ticket)
            self._grant(replica)

    def pod_load(self, order: Hashable, pod: str) -> PodLoad:
        """The pod's numbers; zeros for a replica that has had no request."""
        with self._lock:
            replica = self._replicas.get((order, pod))
            slots = self._config.slots
            if replica is None:
                return PodLoad(slots=slots)
            return PodLoad(
                running=replica.running,
                waiting=len(replica.waiting),
                slots=slots,
                success=replica.success,
                prompt_tokens=replica.prompt_tokens,
                generation_tokens=replica.generation_tokens,
            )

    def _replica(self, order: Hashable, pod: str | None) -> _Replica:
        replica = self._replicas.get((order, pod))
        if replica is None:
            replica = self._replicas[(order, pod)] = _Replica(pod)
        return replica

    def _grant(self, replica: _Replica) -> None:
        while replica.waiting and replica.running < self._config.slots:
            replica.running += 1
            replica.waiting.popleft().granted.set()
