"""bench.zero's figures: the device-seconds integral and what the idle time saved."""

from __future__ import annotations

import pytest

from bench.zero.figures import Sample, Wake, device_seconds, figures


def test_device_seconds_integrates_the_steps_inside_the_window() -> None:
    samples = [Sample(0, 1), Sample(10, 0), Sample(40, 1), Sample(50, 0)]
    assert device_seconds(samples, start=0, end=100) == pytest.approx(20)
    assert device_seconds(samples, start=5, end=45) == pytest.approx(10)  # 5..10 and 40..45
    assert device_seconds([], start=0, end=100) == 0


def test_the_saving_is_the_window_less_what_was_held() -> None:
    samples = [Sample(0, 1), Sample(30, 0), Sample(90, 1), Sample(100, 1)]
    got = figures(
        samples,
        start=0,
        end=120,
        devices_per_replica=1,
        wakes=[Wake(200, 80.0, 81.0), Wake(503, 300.0, 300.0)],
        to_zero_s=[95.0],
    )
    assert got["device_seconds_held"] == pytest.approx(60)  # 0..30 and 90..120
    assert got["device_seconds_saved"] == pytest.approx(60)
    assert got["saved_share"] == pytest.approx(0.5)
    assert (got["wakes"], got["wakes_ok"], got["first_byte_median_s"]) == (2, 1, 80.0)
