"""When to ask the Hub again after it was unavailable: ``Retry-After`` and jittered exponential backoff. Pure.

The controller never waits for the Hub in a worker: a request answered 429 (rate limited), 503 or
not at all fails at once, and ``controller.modelhub.client`` remembers the failure per (repo, revision, token)
for ``backoff_delay`` seconds, during which the order is not sent to the Hub again and is requeued
after the remaining wait. Failure n (0-based) in a row holds for the exponential step
``min(cap, base * 2**n)``, half of it fixed and half random (so N replicas that were refused together
do not come back together), and never less than the server's ``Retry-After`` plus that random half.

``Retry-After`` is either a number of seconds or an HTTP date (RFC 9110, section 10.2.3).
huggingface_hub's own parser reads only the seconds form, so this module reads both.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC
from email.utils import parsedate_to_datetime

RETRY_STATUSES = frozenset({429, 503})


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    base: float = 10.0
    """The first backoff step, in seconds."""
    cap: float = 320.0
    """The largest backoff step, in seconds."""


def parse_retry_after(value: str | None, *, now: float) -> float | None:
    """Seconds to wait from a ``Retry-After`` value: delay-seconds or an HTTP date (``now`` is the
    epoch time it is measured from). None when absent or unreadable; a date in the past is 0."""
    if value is None:
        return None
    text = value.strip()
    if not text:
        return None
    if text.isdigit():
        return float(text)
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:  # an HTTP date is always GMT; parsedate leaves "-0000" naive
        when = when.replace(tzinfo=UTC)
    return max(0.0, when.timestamp() - now)


def backoff_delay(attempt: int, retry_after: float | None, policy: RetryPolicy, rand: float) -> float:
    """The wait after failure ``attempt`` in a row (0 = the first); ``rand`` is uniform in [0, 1)."""
    step = min(policy.cap, policy.base * 2.0 ** min(attempt, 64))
    floor = step / 2 if retry_after is None else max(retry_after, step / 2)
    return floor + rand * step / 2
