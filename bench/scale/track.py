"""Watches the orders (an informer with the admin client) and keeps, per order, its state and when
it first reached each state; samples the counts once a second for the plot."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from bench.scale.figures import State, decided, state
from controller.kube.client import resource_for
from controller.kube.informer import Informer


@dataclass(frozen=True)
class Sample:
    t: float  # seconds since the tracker's origin
    decided: int
    planned: int  # Planned=True (Ready included)
    ready: int


@dataclass
class Tracker:
    api: Any
    prefix: str = "scale-"
    origin: float = field(default_factory=time.monotonic)
    states: dict[tuple[str, str], State] = field(default_factory=dict)
    first: dict[tuple[str, str], dict[State, float]] = field(default_factory=dict)
    samples: list[Sample] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _stop: threading.Event = field(default_factory=threading.Event)

    def start(self) -> None:
        self.informer = Informer(
            self.api, resource_for("ai.deckhouse.io/v1alpha1", "InferenceService"), handler=self._on
        )
        self.informer.start()
        self.informer.wait_synced(120)
        threading.Thread(target=self._sample, name="sampler", daemon=True).start()

    def stop(self) -> None:
        self._stop.set()
        self.informer.stop()

    def _on(self, event: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        meta = obj["metadata"]
        if not str(meta.get("namespace", "")).startswith(self.prefix):
            return
        key = (meta["namespace"], meta["name"])
        now = time.monotonic() - self.origin
        with self._lock:
            if event == "DELETED":
                self.states.pop(key, None)
                return
            s = state(obj)
            self.states[key] = s
            seen = self.first.setdefault(key, {})
            seen.setdefault(s, now)
            if s is State.READY:
                seen.setdefault(State.PLANNED, now)

    def counts(self) -> dict[State, int]:
        with self._lock:
            out = dict.fromkeys(State, 0)
            for s in self.states.values():
                out[s] += 1
            return out

    def _sample(self) -> None:
        while not self._stop.wait(1.0):
            c = self.counts()
            planned = c[State.PLANNED] + c[State.READY]
            total_decided = sum(n for s, n in c.items() if decided(s))
            t = time.monotonic() - self.origin
            self.samples.append(Sample(t, total_decided, planned, c[State.READY]))

    def wait(self, done: Callable[[dict[State, int]], bool], *, timeout: float, what: str) -> float:
        """Wait until ``done(counts)``; returns the tracker time it happened (raises on timeout)."""
        deadline = time.monotonic() + timeout
        last = ""
        while True:
            c = self.counts()
            if done(c):
                return time.monotonic() - self.origin
            line = " ".join(f"{s.value}={n}" for s, n in c.items() if n)
            if line != last and int(time.monotonic()) % 10 == 0:
                print(f"  [{time.monotonic() - self.origin:6.0f}s] {what}: {line}", flush=True)
                last = line
            if time.monotonic() > deadline:
                raise TimeoutError(f"{what}: not after {timeout:.0f}s; {line}")
            time.sleep(0.2)

    def now(self) -> float:
        return time.monotonic() - self.origin
