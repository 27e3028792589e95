"""Download progress, pure: which pod is fetching, the metric text, the samples and the rate, the
WorkloadReady message, and what ``decide`` does with them."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from controller.live import progress
from controller.live.progress import FetchingPod, FetchProgress, Sample, add_sample, parse_metrics, rate
from controller.planning import plan_decision
from controller.render.fetcher_program import metrics_text
from shared import reasons as r
from tests.unit.controller.snapshots import (
    GPU,
    LINKS,
    NOW,
    conditions_of,
    decide_and_build,
    deployment,
    order_with,
    plan_on,
    pod,
    resolved_for,
    run_planner,
    snap,
    status,
)

GIB = 2**30


def fetching(p: dict[str, Any], *, ip: str = "10.244.0.7", state: str = "running") -> dict[str, Any]:
    """``p`` with its fetcher init container in ``state`` (running, terminated, waiting)."""
    out = dict(p)
    out["status"] = {
        **p["status"],
        "podIP": ip,
        "initContainerStatuses": [{"name": "model-fetcher", "state": {state: {}}}],
    }
    return out


# ------------------------------------------------------------------ the fetching pod


def test_only_a_live_pod_with_a_running_fetcher_and_an_ip_is_fetching() -> None:
    plan = plan_on(GPU)
    assert progress.fetching_pod([pod("p-1", plan)]) is None
    assert progress.fetching_pod([fetching(pod("p-1", plan), state="terminated")]) is None
    assert progress.fetching_pod([fetching(pod("p-1", plan), state="waiting")]) is None
    assert progress.fetching_pod([fetching(pod("p-1", plan), ip="")]) is None
    gone = fetching(pod("p-1", plan))
    gone["metadata"] = {**gone["metadata"], "deletionTimestamp": "2026-01-01T00:00:00Z"}
    assert progress.fetching_pod([gone]) is None
    got = progress.fetching_pod([fetching(pod("p-2", plan)), fetching(pod("p-1", plan), ip="fd00::5")])
    assert got == FetchingPod("p-1", "fd00::5")
    assert got.address() == "[fd00::5]:9090"
    assert FetchingPod("p", "10.0.0.1").address() == "10.0.0.1:9090"


# ------------------------------------------------------------------ the metric


def test_the_metric_the_fetcher_serves_is_the_metric_the_controller_reads() -> None:
    assert parse_metrics(metrics_text(123, 4567)) == (123, 4567)
    assert parse_metrics(metrics_text(5, 0)) == (5, None)  # total unknown
    assert parse_metrics("# nothing here\nother_metric 3\n") is None
    assert parse_metrics("model_fetcher_bytes_done NaN\n") is None
    assert parse_metrics("model_fetcher_bytes_done 1e3\nmodel_fetcher_bytes_total 2e3") == (1000, 2000)


# ------------------------------------------------------------------ samples and rate


def test_samples_keep_the_window_and_the_newest_before_it() -> None:
    samples: tuple[Sample, ...] = ()
    for t in range(0, 100, 10):
        samples = add_sample(samples, Sample(float(t), t * 1000), window=30.0)
    assert [s.at for s in samples] == [60.0, 70.0, 80.0, 90.0]
    assert rate(samples) == pytest.approx(1000.0)
    # a gap longer than the window keeps the sample before it, so there is still a rate
    later = add_sample(samples, Sample(500.0, 190_000), window=30.0)
    assert [s.at for s in later] == [90.0, 500.0]
    assert rate(later) == pytest.approx(100_000 / 410)


def test_fewer_bytes_than_before_start_the_series_again() -> None:
    samples = (Sample(0.0, 100), Sample(5.0, 500))
    assert add_sample(samples, Sample(10.0, 50)) == (Sample(10.0, 50),)


def test_no_rate_without_two_samples_apart_in_time() -> None:
    assert rate(()) is None
    assert rate((Sample(1.0, 5),)) is None
    assert rate((Sample(1.0, 5), Sample(1.0, 9))) is None
    assert rate((Sample(1.0, 9), Sample(2.0, 9))) == 0.0


# ------------------------------------------------------------------ the message


@pytest.mark.parametrize(
    ("done", "total", "per_second", "expected"),
    [
        (
            int(3.1 * GIB),
            int(15.2 * GIB),
            int(12.1 * GIB) / 240,
            "Pod p-1 is downloading the model: 3.0 GiB of 15.2 GiB (20%), a few minutes left.",
        ),
        (512 * 2**20, GIB, None, "Pod p-1 is downloading the model: 512.0 MiB of 1.0 GiB (50%)."),
        (512 * 2**20, GIB, 0.0, "Pod p-1 is downloading the model: 512.0 MiB of 1.0 GiB (50%)."),
        (
            GIB - 2**20,
            GIB,
            2**30,
            "Pod p-1 is downloading the model: 921.6 MiB of 1.0 GiB (90%), less than a minute left.",
        ),
        (2 * GIB, GIB, 1.0, "Pod p-1 is downloading the model: 1.0 GiB of 1.0 GiB (100%), finishing."),
        (
            1,
            140 * GIB,
            10 * 2**20,
            "Pod p-1 is downloading the model: 0 KiB of 140.0 GiB (0%), about 4 h left.",
        ),
        (3 * GIB, None, 1e9, "Pod p-1 is downloading the model: 3.0 GiB so far."),
    ],
)
def test_the_message(done: int, total: int | None, per_second: float | None, expected: str) -> None:
    assert progress.progress_message("p-1", done, total, per_second) == expected


@pytest.mark.parametrize(
    ("seconds", "expected"),
    [(59, "less than a minute"), (61, "a few minutes"), (300, "a few minutes"), (301, "about 10 min"),
     (1500, "about 25 min"), (3600, "about 1 h"), (3601, "about 1 h 30 min"), (9000, "about 2 h 30 min")],
)  # fmt: skip
def test_the_time_left_is_told_in_coarse_steps(seconds: float, expected: str) -> None:
    assert progress.time_left_text(seconds) == expected


def test_a_long_download_changes_its_message_a_few_dozen_times_not_once_per_scrape() -> None:
    """Every new message is a status write: 50 minutes of download, scraped every 5 s."""
    total, seconds = 140 * GIB, 3000
    per_second = total / seconds
    messages = {
        progress.progress_message("p-1", int(per_second * t), total, per_second)
        for t in range(0, seconds, int(progress.SCRAPE_PERIOD))
    }
    assert len(messages) <= 30, len(messages)


def test_a_record_speaks_only_for_its_pod_and_while_its_last_sample_is_fresh() -> None:
    p = FetchingPod("p-1", "10.0.0.1")
    record = FetchProgress(
        pod="p-1", samples=(Sample(NOW - 10, 0), Sample(NOW - 5, GIB)), total=4 * GIB, at=NOW - 5
    )
    text = progress.message_for(record, p, NOW)
    assert (
        text is not None
        and "819.2 MiB of 4.0 GiB (20%)" in text
        and text.endswith("less than a minute left.")
    )
    assert progress.message_for(record, FetchingPod("p-2", "10.0.0.2"), NOW) is None
    assert progress.message_for(record, p, NOW - 5 + progress.STALE_AFTER + 1) is None
    failing = FetchProgress(pod="p-1", samples=record.samples, total=record.total, at=NOW, error="refused")
    assert progress.message_for(failing, p, NOW) is None  # the last scrape failed: nothing known now
    assert progress.message_for(FetchProgress(pod="p-1", at=NOW), p, NOW) is None


def test_a_scrape_is_due_once_per_period_and_never_while_one_is_in_flight() -> None:
    p = FetchingPod("p-1", "10.0.0.1")
    assert progress.scrape_due(FetchProgress(), p, NOW)
    assert progress.scrape_due(FetchProgress(pod="p-0", at=NOW), p, NOW)
    assert not progress.scrape_due(FetchProgress(pod="p-1", at=NOW - 1), p, NOW)
    assert progress.scrape_due(FetchProgress(pod="p-1", at=NOW - progress.SCRAPE_PERIOD), p, NOW)
    assert not progress.scrape_due(FetchProgress(pod="p-1", at=NOW - 60, in_flight=True), p, NOW)


# ------------------------------------------------------------------ decide


def _downloading(record: FetchProgress, *, state: str = "running") -> Any:
    plan = plan_on(GPU)
    return snap(
        order=order_with(status(resolved=resolved_for(plan))),
        plan_in_force=plan,
        deployment=deployment(plan, available=0),
        pods=(fetching(pod("p-1", plan), state=state),),
        fetch_progress=record,
        links=LINKS,
    )


def test_a_running_fetcher_is_scraped_and_its_progress_is_the_progressing_message() -> None:
    record = FetchProgress(
        pod="p-1", samples=(Sample(NOW - 6, GIB), Sample(NOW - 1, 2 * GIB)), total=8 * GIB, at=NOW - 1
    )
    s = _downloading(record)
    intents, st = decide_and_build(s, run_planner(s, plan_decision(s)))
    assert conditions_of(st)[r.WORKLOAD_READY] == ("False", r.PROGRESSING)
    message = intents.verdicts[r.WORKLOAD_READY].message
    assert message == "Pod p-1 is downloading the model: 1.6 GiB of 8.0 GiB (20%), less than a minute left."
    assert intents.scrape is not None and intents.scrape.address == "10.244.0.7:9090"
    assert not intents.scrape.due  # scraped a second ago
    assert intents.requeue == pytest.approx(progress.SCRAPE_PERIOD - 1)


def test_the_first_scrape_is_asked_for_and_the_message_waits_for_it() -> None:
    s = _downloading(FetchProgress())
    intents, _ = decide_and_build(s, run_planner(s, plan_decision(s)))
    assert intents.scrape is not None and intents.scrape.due and intents.scrape.pod == "p-1"
    assert intents.verdicts[r.WORKLOAD_READY].message == "Waiting for a replica to become available."


def test_once_the_fetcher_is_done_nothing_is_scraped_and_no_progress_lingers() -> None:
    record = FetchProgress(pod="p-1", samples=(Sample(NOW - 1, 8 * GIB),), total=8 * GIB, at=NOW - 1)
    s = _downloading(record, state="terminated")
    intents, st = decide_and_build(s, run_planner(s, plan_decision(s)))
    assert conditions_of(st)[r.WORKLOAD_READY] == ("False", r.PROGRESSING)
    assert intents.scrape is None
    assert "download" not in intents.verdicts[r.WORKLOAD_READY].message


def test_a_labelled_pod_outside_the_orders_own_workload_is_never_scraped() -> None:
    """Issue 21, item 3: a tenant's pod with the order's label and a running fetcher, first by name."""
    plan = plan_on(GPU)
    stray = fetching(pod("a-stray", plan), ip="10.0.0.66")
    stray["metadata"] = {**stray["metadata"], "ownerReferences": []}
    forged = fetching(pod("a-forged", plan), ip="10.0.0.67")  # claims a ReplicaSet that is not ours
    forged["metadata"] = {
        **forged["metadata"],
        "ownerReferences": [{"kind": "ReplicaSet", "name": "x", "uid": "rs-other", "controller": True}],
    }
    base = _downloading(FetchProgress())
    s = replace(base, pods=(stray, forged, *base.pods), links={**LINKS, "rs-other": "dep-other"})
    intents, _ = decide_and_build(s, run_planner(s, plan_decision(s)))
    assert intents.scrape is not None and intents.scrape.pod == "p-1"
    # a Deployment the order does not control has no pods of the order's
    dep = s.deployment
    assert dep is not None
    foreign = {**dep, "metadata": {**dep["metadata"], "ownerReferences": []}}
    s = replace(s, deployment=foreign)
    intents, _ = decide_and_build(s, run_planner(s, plan_decision(s)))
    assert intents.scrape is None
    # without the link from the pod's ReplicaSet to the Deployment, nothing either
    s = replace(base, links={})
    intents, _ = decide_and_build(s, run_planner(s, plan_decision(s)))
    assert intents.scrape is None
