"""The faults of a chaos run: a seeded schedule and the thread that injects it.

- ``kill``: SIGKILL of the controller replica that leads (the supervisor starts it again, as a
  Deployment would), every 20-40 s;
- ``apiserver`` / ``etcd``: a restart of that component (``launcher.restart_component``);
- ``webhook``: the webhook process stopped for ``webhook_down`` seconds, then started again on
  the same port and certificate (failurePolicy Fail: writes of orders are refused meanwhile);
- ``hub``: the Hub mirror answers 503 to everything for ``hub_seconds``.
"""

from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass, field

from bench.chaos.stack import Stack
from devtools.cluster import launcher


@dataclass(frozen=True)
class Schedule:
    """Offsets in seconds from the start; None leaves a fault out."""

    kill_every: tuple[float, float] | None = (20.0, 40.0)
    first_kill: float = 15.0
    kills_until: float = 0.0  # no kill after this offset (0: none at all)
    apiserver_at: float | None = None
    etcd_at: float | None = None
    webhook_at: float | None = None
    webhook_down: float = 10.0
    hub_at: float | None = None
    hub_seconds: float = 60.0

    @staticmethod
    def full(seconds: float) -> Schedule:
        """Everything, for ``bench.chaos``: kills over the churn, one of each other fault."""
        return Schedule(
            kills_until=0.85 * seconds,
            apiserver_at=0.15 * seconds,
            etcd_at=0.3 * seconds,
            webhook_at=0.45 * seconds,
            hub_at=0.55 * seconds,
            hub_seconds=60.0,
        )

    def events(self, seed: int) -> list[tuple[float, str]]:
        rng = random.Random(seed ^ 0x5EED)
        out: list[tuple[float, str]] = []
        if self.kill_every is not None:
            t = self.first_kill
            while t <= self.kills_until:
                out.append((t, "kill"))
                t += rng.uniform(*self.kill_every)
        for at, what in (
            (self.apiserver_at, "apiserver"),
            (self.etcd_at, "etcd"),
            (self.webhook_at, "webhook"),
            (self.hub_at, "hub"),
        ):
            if at is not None:
                out.append((at, what))
        if self.hub_at is not None:
            out.append((self.hub_at + self.hub_seconds, "hub_back"))
        return sorted(out)


@dataclass
class Window:
    what: str
    start: float
    end: float | None = None
    detail: str = ""


@dataclass
class Injector:
    """Runs a schedule against a stack on its own thread; ``windows`` says when each fault held."""

    stack: Stack
    schedule: Schedule
    seed: int
    windows: list[Window] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def run(self, start: float, stop: threading.Event) -> None:
        for at, what in self.schedule.events(self.seed):
            delay = start + at - time.time()
            hub = self.active("hub")
            if what == "hub_back" and hub is not None:  # the outage lasts hub_seconds however late it began
                delay = hub.start + self.schedule.hub_seconds - time.time()
            if delay > 0 and stop.wait(delay):
                break
            try:
                self._inject(what)
            except Exception as e:  # a fault that could not be injected is reported, not fatal
                self.errors.append(f"{what}: {type(e).__name__}: {e}")
        self._hub_back()  # never leave the mirror failing

    def _inject(self, what: str) -> None:
        if what == "kill":
            t = time.time()
            name = self.stack.replicas.kill_leader()
            self._add(Window("kill", t, time.time(), name or "no leader to kill"))
        elif what in ("apiserver", "etcd"):
            t = time.time()
            launcher.restart_component(
                "kube-apiserver" if what == "apiserver" else what, bin_dir=self.stack.cluster.bin_dir
            )
            self._add(Window(what, t, time.time()))
        elif what == "webhook":
            t = time.time()
            self.stack.webhook.stop()
            window = Window("webhook", t)
            self._add(window)
            time.sleep(self.schedule.webhook_down)
            self.stack.webhook.start_again()
            window.end = time.time()  # healthy again: from here on, a write may be admitted
        elif what == "hub":
            self.stack.mirror.inject_fault(503)
            self._add(Window("hub", time.time()))
        elif what == "hub_back":
            self._hub_back()

    def _hub_back(self) -> None:
        self.stack.mirror.clear_faults()
        for w in self.windows:
            if w.what == "hub" and w.end is None:
                w.end = time.time()

    def _add(self, window: Window) -> None:
        with self.lock:
            self.windows.append(window)

    def active(self, what: str) -> Window | None:
        with self.lock:
            for w in self.windows:
                if w.what == what and w.end is None:
                    return w
        return None

    def count(self, what: str) -> int:
        return sum(
            1 for w in self.windows if w.what == what and (what != "kill" or w.detail != "no leader to kill")
        )
