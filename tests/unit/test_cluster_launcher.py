"""The launcher's process handling: what CI's cold start exercises and a warm local run skips.

A warm machine reuses the running control plane, so ``_start`` never runs there; CI starts it
fresh inside the test session, where a leaked log handle or an unreaped ``Popen`` turns into a
ResourceWarning, and under ``filterwarnings = error`` into a failed test.
"""

from __future__ import annotations

import gc
import pathlib
import sys
import time

import pytest

from devtools.cluster import launcher


@pytest.fixture
def sandbox(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> pathlib.Path:
    monkeypatch.setattr(launcher, "STATE", tmp_path)
    monkeypatch.setattr(launcher, "P", launcher.Paths(tmp_path))
    monkeypatch.setattr(launcher, "COMPONENTS", ("sleeper",))
    monkeypatch.setattr(launcher, "PORTS", {"sleeper": ()})
    return tmp_path


def test_a_started_component_leaks_nothing_and_is_reaped_when_stopped(sandbox: pathlib.Path) -> None:
    launcher._start("sleeper", [sys.executable, "-c", "import time; print('up', flush=True); time.sleep(60)"])
    pid = launcher._pid("sleeper")
    assert pid is not None

    log = sandbox / "logs" / "sleeper.log"
    deadline = time.monotonic() + 10
    while not log.read_text().startswith("up") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert log.read_text().startswith("up"), "the child writes to its log"

    # Any log handle or Popen dropped by _start would warn here, and the warning is an error.
    gc.collect()

    launcher._stop_all()
    assert launcher._pid("sleeper") is None
    assert not (sandbox / "pids" / "sleeper").exists()
    # Reaped, not a zombie: /proc no longer lists it.
    assert not pathlib.Path(f"/proc/{pid}").exists()
