"""The real model fetcher, as rendered, downloads from the Hub mirror while the controller's progress
book scrapes it: bytes done rise, never pass the total, and end as exactly the selected files.

The init container comes from ``render.workload`` and runs as a local process
(``tests.integration.fetcher_run``). The mirror is throttled so the download takes a few seconds.
No cluster is needed.
"""

from __future__ import annotations

import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from controller import render
from controller.live.progress import FetchingPod, FetchProgress, message_for
from controller.live.progress_book import ProgressBook
from shared import names
from standins.hub_mirror import RunningMirror, start_mirror
from testkit.planner import inventory_of, plan, small_fleet
from tests.integration.fetcher_run import fetcher_command, files_under, start_fetcher
from tests.unit.controller.builders import make_class, make_order
from tests.unit.controller.test_render import SETTINGS
from tests.unit.test_model_files import FACTS, REPOS

MINILM = "sentence-transformers/all-MiniLM-L6-v2"
THROTTLE = 20 * 2**20  # bytes per second per file: the ~87 MiB model file takes about 4 s


@pytest.fixture
def mirror() -> Iterator[RunningMirror]:
    with start_mirror(throttle=THROTTLE) as m:
        yield m


def rendered_fetcher(rid: str) -> dict[str, Any]:
    facts = FACTS[rid]
    outcome = plan(inventory_of(small_fleet()), facts)
    assert outcome.ok and outcome.plan is not None, outcome.message
    order = make_order(spec={"model": {"ref": {"name": rid}}})
    objs = render.workload(
        order,
        outcome.plan,
        make_class().spec,
        SETTINGS,
        revision=facts.revision,
        fetch=render.fetch_spec(facts, facts.revision),
    )
    (deployment,) = [o for o in objs if o["kind"] == "Deployment"]
    fetcher = next(
        c
        for c in deployment["spec"]["template"]["spec"]["initContainers"]
        if c["name"] == names.FETCHER_CONTAINER
    )
    assert fetcher["name"] == names.FETCHER_CONTAINER
    return dict(fetcher)


def test_the_fetcher_reports_its_download_as_it_goes(mirror: RunningMirror, tmp_path: Path) -> None:
    fetcher = rendered_fetcher(MINILM)
    total = int({e["name"]: e.get("value") for e in fetcher["env"]}["MODEL_FETCHER_BYTES_TOTAL"])
    assert total == sum(s for s in FACTS[MINILM].files.values() if s is not None) > 80 * 2**20
    local_dir = tmp_path / "model"

    scraped = threading.Event()
    book = ProgressBook(on_done=lambda key: scraped.set())
    key = ("support", "minilm")
    pod = FetchingPod("fetcher-0", "127.0.0.1")
    seen: list[FetchProgress] = []
    started = time.monotonic()
    proc, address = start_fetcher(fetcher, local_dir=local_dir, home=tmp_path, hf_endpoint=mirror.url)
    try:
        while proc.poll() is None:
            scraped.clear()
            book.request(key, pod.name, address)
            assert scraped.wait(10)
            record = book.state(key)
            if not record.error:
                seen.append(record)
            time.sleep(0.5)
        proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
        book.close()
    elapsed = time.monotonic() - started
    assert proc.returncode == 0, (tmp_path / "model-fetcher.log").read_text()[-2000:]

    done = [r.done for r in seen if r.done is not None]
    assert len(done) >= 4, (elapsed, done)
    assert done == sorted(done) and len(set(done)) >= 3, done  # it moved, and never backwards
    assert all(r.total == total for r in seen)
    assert max(done) <= total
    # the controller's message from the book's record, while it was downloading
    mid = next(r for r in seen if r.done is not None and 0 < r.done < total and len(r.samples) >= 2)
    text = message_for(mid, pod, mid.samples[-1].at)
    assert text is not None and f"of {total / 2**20:.1f} MiB (" in text and text.endswith(" left."), text

    # finally: exactly the selected files, with their sizes, and they are the total
    on_disk = files_under(local_dir)
    assert on_disk == dict(FACTS[MINILM].files)
    assert sum(on_disk.values()) == total
    assert set(REPOS[MINILM].files) > set(on_disk)  # the duplicates (onnx, bin, ...) stayed out


def test_a_failed_download_fails_the_fetcher(mirror: RunningMirror, tmp_path: Path) -> None:
    fetcher = rendered_fetcher(MINILM)
    fetcher["args"] = [("no-such/repo" if a == MINILM else a) for a in fetcher["args"]]
    argv, env = fetcher_command(fetcher, local_dir=tmp_path / "model", home=tmp_path, hf_endpoint=mirror.url)
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
    assert done.stdout.startswith("model-fetcher metrics on 127.0.0.1:")
    assert done.returncode != 0 and "no-such/repo" in done.stderr, done.stderr[-2000:]


def test_a_taken_port_costs_the_metric_not_the_download(mirror: RunningMirror, tmp_path: Path) -> None:
    mirror.state.throttle = None
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = int(taken.getsockname()[1])
        argv, env = fetcher_command(
            rendered_fetcher(MINILM),
            local_dir=tmp_path / "model",
            home=tmp_path,
            hf_endpoint=mirror.url,
            port=port,
        )
        done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
    assert done.stdout.startswith(f"model-fetcher metrics off: cannot listen on 127.0.0.1:{port}"), (
        done.stdout
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert files_under(tmp_path / "model") == dict(FACTS[MINILM].files)


def test_sigterm_reaches_the_download_and_the_exit_code_says_so(
    mirror: RunningMirror, tmp_path: Path
) -> None:
    """As when the pod is deleted: the wrapper is PID 1 of the container and gets the SIGTERM."""
    proc, _ = start_fetcher(
        rendered_fetcher(MINILM), local_dir=tmp_path / "model", home=tmp_path, hf_endpoint=mirror.url
    )
    try:
        time.sleep(1.5)
        assert proc.poll() is None
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 128 + signal.SIGTERM
    assert files_under(tmp_path / "model") != dict(FACTS[MINILM].files)  # it stopped before the end


def test_a_scrape_nothing_answers_records_an_error_and_a_new_pod_starts_a_new_record() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = f"127.0.0.1:{s.getsockname()[1]}"  # bound, never listening: connections are refused
        scraped = threading.Event()
        book = ProgressBook(on_done=lambda key: scraped.set())
        key = ("support", "gone")
        try:
            book.request(key, "p-1", closed)
            assert scraped.wait(10)
            record = book.state(key)
            assert (record.pod, record.samples, record.in_flight) == ("p-1", (), False)
            assert record.error.startswith("GET /metrics failed: ConnectError"), record.error
            assert message_for(record, FetchingPod("p-1", "127.0.0.1"), record.at) is None
            scraped.clear()
            book.request(key, "p-2", closed)
            assert scraped.wait(10)
            assert book.state(key).pod == "p-2"
            book.forget(key)
            assert book.state(key) == FetchProgress()
        finally:
            book.close()
