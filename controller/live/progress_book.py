"""The progress book: scrapes of the model fetcher's metric, off the reconcile workers. I/O.

``request(key, pod, address)`` starts ``GET http://<address>/metrics`` on a small pool of its own
unless one is in flight; the answer becomes a sample of the order's record
(``controller.live.progress.add_sample``) and ``on_done(key)`` has the order reconciled with it.
``state`` is what ``observe`` puts in the snapshot; ``forget`` drops the record once no fetcher runs.

The module setting ``modelFetcherMetricsAddressOverride`` (host:port) sends every scrape to that
address instead of the pod's IP, for a local plane whose pods have no reachable IP (KWOK); empty
in production.

The fetcher runs in the tenant's pod: a scrape ends within ``timeout`` seconds, wall clock, and
reads at most ``ANSWER_LIMIT`` bytes (``controller.live.bounded_http``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

import httpx

from controller.live import bounded_http
from controller.live.progress import FetchProgress, Sample, add_sample, parse_metrics

Key = tuple[str, str]
ANSWER_LIMIT = 16 * 1024  # the fetcher's metrics text is a few hundred bytes


class ProgressBook:
    def __init__(
        self,
        *,
        on_done: Callable[[Key], None],
        address_override: str = "",
        timeout: float = 3.0,
        workers: int = 2,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._on_done = on_done
        self._override = address_override.strip()
        self._clock = clock
        self._client = bounded_http.client(seconds=timeout)
        self._lock = threading.Lock()
        self._records: dict[Key, FetchProgress] = {}
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="fetch-progress")

    def state(self, key: Key) -> FetchProgress:
        with self._lock:
            return self._records.get(key, FetchProgress())

    def request(self, key: Key, pod: str, address: str) -> None:
        """Scrape ``pod``'s fetcher at ``address`` (host:port) unless a scrape is in flight; a new
        pod starts a new record."""
        with self._lock:
            record = self._records.get(key, FetchProgress())
            if record.in_flight:
                return
            if record.pod != pod:
                record = FetchProgress(pod=pod)
            self._records[key] = replace(record, in_flight=True)
        self._pool.submit(self._run, key, pod, self._override or address)

    def forget(self, key: Key) -> None:
        with self._lock:
            record = self._records.get(key)
            if record is not None and not record.in_flight:
                del self._records[key]

    def close(self) -> None:
        """Cancel queued scrapes, wait for those in flight, then close the HTTP client."""
        self._pool.shutdown(wait=True, cancel_futures=True)
        self._client.close()

    def _run(self, key: Key, pod: str, address: str) -> None:
        error, parsed = "", None
        try:
            resp = bounded_http.get(self._client, f"http://{address}/metrics", limit=ANSWER_LIMIT)
            if resp.status != 200:
                error = f"GET /metrics answered HTTP {resp.status}."
            else:
                parsed = parse_metrics(resp.body.decode("utf-8", "replace"))
                if parsed is None:
                    error = "GET /metrics has no model_fetcher_bytes_done."
        except httpx.HTTPError as e:
            error = f"GET /metrics failed: {type(e).__name__}"
        now = self._clock()
        with self._lock:
            record = self._records.get(key, FetchProgress(pod=pod))
            if record.pod != pod:
                record = FetchProgress(pod=pod)
            if parsed is not None:
                record = replace(
                    record,
                    samples=add_sample(record.samples, Sample(now, parsed[0])),
                    total=parsed[1],
                    error="",
                )
            else:
                record = replace(record, error=error)
            self._records[key] = replace(record, at=now, in_flight=False)
        self._on_done(key)
