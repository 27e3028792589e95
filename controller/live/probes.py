"""The probe book: probes run on a small pool of their own, never on the reconcile workers. I/O.

``request`` starts a probe of an order's endpoint unless one is in flight; when it finishes, the
book records the result (consecutive failures, detail, time) and calls ``on_done(key)`` so the
order is reconciled with the new result. ``state`` is what ``observe`` puts in the snapshot.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from controller.live.probe import Prober
from controller.live.probe_state import ProbeState

Key = tuple[str, str]


class ProbeBook:
    def __init__(
        self,
        prober: Prober,
        *,
        on_done: Callable[[Key], None],
        on_result: Callable[[bool], None] = lambda ok: None,
        workers: int = 4,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._prober = prober
        self._on_done = on_done
        self._on_result = on_result
        self._clock = clock
        self._lock = threading.Lock()
        self._states: dict[Key, ProbeState] = {}
        self._urls: dict[Key, str] = {}
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="probe")

    def state(self, key: Key, url: str | None) -> ProbeState:
        """The record for the order; a new endpoint URL starts a new record."""
        with self._lock:
            if url is not None and self._urls.get(key) not in (None, url):
                self._states.pop(key, None)
            return self._states.get(key, ProbeState())

    def request(self, key: Key, url: str, token: str | None) -> None:
        with self._lock:
            st = self._states.get(key, ProbeState())
            if st.in_flight:
                return
            self._states[key] = ProbeState(st.ok, st.detail, st.failures, st.at, in_flight=True)
            self._urls[key] = url
        self._pool.submit(self._run, key, url, token)

    def forget(self, key: Key) -> None:
        with self._lock:
            self._states.pop(key, None)
            self._urls.pop(key, None)

    def close(self) -> None:
        """Cancel queued probes and wait for those in flight (each is bounded by the probe timeout),
        so the prober can be closed after this with no connection still open."""
        self._pool.shutdown(wait=True, cancel_futures=True)

    def _run(self, key: Key, url: str, token: str | None) -> None:
        result = self._prober.probe(url, token)
        self._on_result(result.ok)
        with self._lock:
            st = self._states.get(key, ProbeState())
            failures = 0 if result.ok else st.failures + 1
            self._states[key] = ProbeState(result.ok, result.detail, failures, self._clock(), in_flight=False)
        self._on_done(key)
