"""Retry-After parsing and the backoff delays (controller.modelhub.retry), as pure functions."""

from __future__ import annotations

import email.utils

from hypothesis import given
from hypothesis import strategies as st

from controller.modelhub.retry import RetryPolicy, backoff_delay, parse_retry_after

NOW = 1_700_000_000.0


def test_retry_after_in_seconds() -> None:
    assert parse_retry_after("120", now=NOW) == 120.0
    assert parse_retry_after(" 0 ", now=NOW) == 0.0


def test_retry_after_as_an_http_date() -> None:
    assert parse_retry_after(email.utils.formatdate(NOW + 30, usegmt=True), now=NOW) == 30.0
    assert parse_retry_after(email.utils.formatdate(NOW - 30, usegmt=True), now=NOW) == 0.0


def test_retry_after_absent_or_unreadable_is_none() -> None:
    for value in (None, "", "soon", "-5", "1.5e3"):
        assert parse_retry_after(value, now=NOW) is None


@given(
    attempt=st.integers(min_value=0, max_value=20),
    hint=st.none() | st.floats(min_value=0, max_value=3600),
    rand=st.floats(min_value=0, max_value=1, exclude_max=True),
)
def test_a_delay_honours_retry_after_and_is_bounded(attempt: int, hint: float | None, rand: float) -> None:
    policy = RetryPolicy()
    delay = backoff_delay(attempt, hint, policy, rand)
    if hint is not None:
        assert delay >= hint
    step = min(policy.cap, policy.base * 2**attempt)
    assert step / 2 <= delay <= max(hint or 0.0, step / 2) + step / 2


def test_without_a_hint_the_delays_double_up_to_the_cap() -> None:
    policy = RetryPolicy(base=1.0, cap=8.0)
    assert [backoff_delay(n, None, policy, 0.0) for n in range(6)] == [0.5, 1.0, 2.0, 4.0, 4.0, 4.0]
