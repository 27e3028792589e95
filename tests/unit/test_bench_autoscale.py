"""bench.autoscale's figures from hand-made samples."""

from __future__ import annotations

from bench.autoscale.figures import Sample, direction_changes, figures


def test_direction_changes_count_turns_not_flats() -> None:
    assert direction_changes([1, 2, 2, 1]) == 1
    assert direction_changes([1, 2, 1, 2, 1]) == 3
    assert direction_changes([1, 1, 1]) == 0
    assert direction_changes([1, 2, 3, 3, 2, 2, 1]) == 1


def s(t: float, wanted: int, ready: int, desired: int | None = None, queue: float | None = None) -> Sample:
    return Sample(t, wanted, ready, desired, queue)


def test_figures_measure_from_the_step_and_from_the_quiet() -> None:
    samples = [
        s(0, 1, 1, 1, 0),
        s(10, 1, 1, 1, 6),  # the load step is at 5
        s(20, 2, 1, 2, 9),  # decision 15 s after the step
        s(60, 2, 2, 2, 1),  # a new replica ready 55 s after it
        s(100, 2, 2, 2, 0),  # quiet from 90
        s(130, 1, 1, 1, 0),  # back to min 40 s after the quiet
    ]
    f = figures(samples, load_at=5, quiet_at=90, min_replicas=1)
    assert f["replicas_at_step"] == 1
    assert f["decision_s"] == 15
    assert f["new_replica_ready_s"] == 55
    assert f["peak_queue"] == 9
    assert f["peak_ready"] == 2
    assert f["direction_changes"] == 1
    assert f["shrank_while_loaded"] is False
    assert f["back_to_min_s"] == 40


def test_a_shrink_under_load_and_a_run_that_never_grows_are_reported() -> None:
    samples = [s(0, 1, 1), s(10, 2, 1, 2), s(20, 1, 1, 1), s(30, 1, 1, 1)]
    f = figures(samples, load_at=5, quiet_at=25, min_replicas=1)
    assert f["shrank_while_loaded"] is True
    flat = figures([s(0, 1, 1, 1), s(10, 1, 1, 1)], load_at=5, quiet_at=8, min_replicas=1)
    assert flat["decision_s"] is None and flat["new_replica_ready_s"] is None
    assert flat["peak_queue"] is None
