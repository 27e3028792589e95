"""Download progress of the model fetcher: which pod is fetching, its samples, and the message. Pure.

While an order's pod has its ``model-fetcher`` init container running, the controller scrapes the
fetcher's metric (``controller/render/fetcher_program.py``; ``controller.live.progress_book`` does the
I/O off the reconcile workers) every ``SCRAPE_PERIOD`` seconds. Each answer is a ``Sample`` of bytes
done; the record keeps the samples of the last ``RATE_WINDOW`` seconds, and the rate over them gives
the time left. ``progress_message`` turns them into the WorkloadReady message, for example
``Pod x-7d9f-abc is downloading the model: 3.0 GiB of 15.2 GiB (20%), about 5 min left.``

A record speaks only for the pod it was taken from, only while its last scrape answered and only
while that answer is fresh (``STALE_AFTER``):
when the fetcher is done or the pod is gone, the message is judged from what is observed now.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from shared import names

SCRAPE_PERIOD = 5.0  # seconds between scrapes of one fetcher
RATE_WINDOW = 60.0  # seconds of samples the rate is taken over
STALE_AFTER = 3 * SCRAPE_PERIOD  # a record older than this says nothing about now

DONE_METRIC = "model_fetcher_bytes_done"
TOTAL_METRIC = "model_fetcher_bytes_total"

Obj = dict[str, Any]


@dataclass(frozen=True, slots=True)
class FetchingPod:
    """A live pod of the order whose fetcher runs, and the address its metric answers on."""

    name: str
    ip: str

    def address(self) -> str:
        host = f"[{self.ip}]" if ":" in self.ip else self.ip
        return f"{host}:{names.FETCHER_METRICS_PORT}"


@dataclass(frozen=True, slots=True)
class Sample:
    at: float  # epoch seconds
    done: int


@dataclass(frozen=True, slots=True)
class FetchProgress:
    """The progress book's record for one order: the pod scraped, its samples (oldest first), the
    total it reported (None: unknown), the last error, and whether a scrape is in flight."""

    pod: str = ""
    samples: tuple[Sample, ...] = ()
    total: int | None = None
    error: str = ""
    at: float = 0.0  # when the last scrape finished (0: never)
    in_flight: bool = False

    @property
    def done(self) -> int | None:
        return self.samples[-1].done if self.samples else None


def fetching_pod(pods: Sequence[Obj]) -> FetchingPod | None:
    """The first live pod (by name) whose fetcher init container is running and that has an IP."""
    found = []
    for pod in pods:
        meta, status = pod.get("metadata", {}), pod.get("status", {}) or {}
        if meta.get("deletionTimestamp") or not status.get("podIP"):
            continue
        for c in status.get("initContainerStatuses") or []:
            if c.get("name") == names.FETCHER_CONTAINER and "running" in (c.get("state") or {}):
                found.append(FetchingPod(meta["name"], status["podIP"]))
    return min(found, key=lambda p: p.name) if found else None


def parse_metrics(text: str) -> tuple[int, int | None] | None:
    """(bytes done, bytes total or None when unknown) from the fetcher's metrics text; None when the
    text has no ``model_fetcher_bytes_done`` sample."""
    values: dict[str, float] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 2 and not line.startswith("#") and parts[0] in (DONE_METRIC, TOTAL_METRIC):
            try:
                values[parts[0]] = float(parts[1])
            except ValueError:
                continue
    done = values.get(DONE_METRIC)
    if done is None or not math.isfinite(done) or done < 0:
        return None
    total = values.get(TOTAL_METRIC)
    return int(done), (int(total) if total is not None and math.isfinite(total) and total > 0 else None)


def add_sample(
    samples: Sequence[Sample], sample: Sample, *, window: float = RATE_WINDOW
) -> tuple[Sample, ...]:
    """The samples after ``sample``: those of the last ``window`` seconds (the newest before it is
    always kept, so two samples give a rate). Fewer bytes than before (a restarted fetcher that
    lost a partial file) starts the series again."""
    if samples and sample.done < samples[-1].done:
        return (sample,)
    kept = [s for s in samples if sample.at - s.at <= window]
    if not kept and samples:
        kept = [samples[-1]]
    return (*kept, sample)


def rate(samples: Sequence[Sample]) -> float | None:
    """Bytes per second from the oldest to the newest sample; None without two samples in time."""
    if len(samples) < 2:
        return None
    first, last = samples[0], samples[-1]
    if last.at <= first.at:
        return None
    return max(0.0, (last.done - first.done) / (last.at - first.at))


def size_text(n: int) -> str:
    """``3.1 GiB``, ``512.0 MiB``, ``900 KiB``."""
    if n >= 2**30:
        return f"{n / 2**30:.1f} GiB"
    if n >= 2**20:
        return f"{n / 2**20:.1f} MiB"
    return f"{math.ceil(n / 2**10)} KiB"


def time_left_text(seconds: float) -> str:
    """``less than a minute``, ``a few minutes``, ``about 15 min`` (5-minute steps), ``about 2 h 30 min``
    (half-hour steps): coarse, so that the message changes seldom (``PERCENT_STEP``)."""
    minutes = math.ceil(seconds / 60)
    if seconds < 60:
        return "less than a minute"
    if minutes <= 5:
        return "a few minutes"
    if minutes < 60:
        return f"about {5 * math.ceil(minutes / 5)} min"
    half_hours = math.ceil(minutes / 30)
    hours, rest = divmod(half_hours * 30, 60)
    return f"about {hours} h" + (f" {rest} min" if rest else "")


PERCENT_STEP = 10
"""The message moves in tenths of the download. Every change of the message is a status write, so
the bytes done are shown rounded down to a step and the time left in coarse steps: a download
costs a few dozen writes at most, however long it takes, not one per scrape."""


def progress_message(pod: str, done: int, total: int | None, per_second: float | None) -> str:
    """The WorkloadReady message while ``pod``'s fetcher downloads (see the module doc and
    ``PERCENT_STEP``)."""
    head = f"Pod {pod} is downloading the model: "
    if total is None:
        return head + f"{size_text(done)} so far."
    shown = min(done, total)  # a leftover partial file may count bytes the total does not
    if shown >= total:
        return head + f"{size_text(total)} of {size_text(total)} (100%), finishing."
    pct = PERCENT_STEP * math.floor(100 * shown / total / PERCENT_STEP)
    text = head + f"{size_text(total * pct // 100)} of {size_text(total)} ({pct}%)"
    if not per_second:
        return text + "."
    return text + f", {time_left_text((total - shown) / per_second)} left."


def message_for(record: FetchProgress, pod: FetchingPod, now: float) -> str | None:
    """The progress message from the record, when it is of this pod, its last scrape answered and
    that answer is fresh; else None."""
    if (
        record.pod != pod.name
        or record.error
        or not record.samples
        or now - record.samples[-1].at > STALE_AFTER
    ):
        return None
    assert record.done is not None
    return progress_message(pod.name, record.done, record.total, rate(record.samples))


def scrape_due(record: FetchProgress, pod: FetchingPod, now: float) -> bool:
    """Whether to scrape ``pod`` now: never scraped, another pod, or the period has passed."""
    if record.in_flight:
        return False
    return record.pod != pod.name or record.at == 0.0 or now - record.at >= SCRAPE_PERIOD
