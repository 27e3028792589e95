"""Polling until something holds, for tests and tools that drive a running plane."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


class WaitTimeoutError(AssertionError):
    """What was waited for did not happen in time (an AssertionError: a test that waits fails)."""


def wait_for(
    fetch: Callable[[], T],
    predicate: Callable[[T], bool],
    *,
    timeout: float = 30.0,
    interval: float = 0.25,
    message: str = "condition",
) -> T:
    """Poll ``fetch`` until ``predicate`` holds; WaitTimeoutError with the last value (or error) seen."""
    deadline = time.monotonic() + timeout
    last: Any = None
    error: Exception | None = None
    while True:
        try:
            last = fetch()
            error = None
            if predicate(last):
                return last  # type: ignore[no-any-return]
        except WaitTimeoutError:
            raise  # a wait inside ``fetch`` timed out: that is the answer, not a value to retry
        except Exception as e:
            error = e
        if time.monotonic() >= deadline:
            detail = f"error: {error!r}" if error else f"last value: {last!r}"
            raise WaitTimeoutError(f"timed out after {timeout:.0f}s waiting for {message}; {detail}")
        time.sleep(interval)
