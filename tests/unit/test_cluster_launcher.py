"""The plane's process handling: what CI's cold start exercises and a warm local run skips.

A warm machine reuses the running control plane, so ``daemons.start`` never runs there; CI starts it
fresh inside the test session, where a leaked log handle or an unreaped ``Popen`` turns into a
ResourceWarning, and under ``filterwarnings = error`` into a failed test.
"""

from __future__ import annotations

import gc
import pathlib
import sys
import time

from devtools.cluster import daemons
from devtools.cluster.config import Paths


def test_a_started_component_leaks_nothing_and_is_reaped_when_stopped(tmp_path: pathlib.Path) -> None:
    paths = Paths(tmp_path)
    argv = [sys.executable, "-c", "import time; print('up', flush=True); time.sleep(60)"]
    daemons.start(paths, "sleeper", argv, ports=())
    pid = daemons.pid(paths, "sleeper")
    assert pid is not None

    log = tmp_path / "logs" / "sleeper.log"
    deadline = time.monotonic() + 10
    while not log.read_text().startswith("up") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert log.read_text().startswith("up"), "the child writes to its log"

    # Any log handle or Popen dropped by start would warn here, and the warning is an error.
    gc.collect()

    daemons.stop(paths, "sleeper")
    assert daemons.pid(paths, "sleeper") is None
    assert not (tmp_path / "pids" / "sleeper").exists()
    # Reaped, not a zombie: /proc no longer lists it.
    assert not pathlib.Path(f"/proc/{pid}").exists()
