"""The plane's processes: daemons that outlive the process that started them (the next test run reuses
them), tracked by pid files in ``<state>/pids/<name>`` with their logs in ``<state>/logs/<name>.log``.

``start`` refuses a port someone else holds (``up`` would otherwise wait on, or talk to, a process that
is not ours); ``stop`` sends SIGTERM to the daemon's process group, then SIGKILL after 15 s; ``locked``
serialises ``up``/``down`` on one state directory (parallel test sessions call ``up``).
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import os
import signal
import socket
import subprocess
import time
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence

from devtools.cluster.config import Paths, log

# This process still holds a Popen for each daemon it started: kept here, it is neither
# garbage-collected while the child runs (a ResourceWarning, an error under pytest) nor left as a
# zombie that kill(pid, 0) would still report alive after ``stop``.
_SPAWNED: dict[str, subprocess.Popen[bytes]] = {}


@atexit.register
def _let_go() -> None:
    """The daemons outlive this process on purpose: drop their handles quietly at exit (a Popen
    collected while its child runs warns, and under pytest's ``filterwarnings = error`` the interpreter
    reports each one as it finalizes)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        _SPAWNED.clear()  # the last reference: each Popen is collected here, under this filter


def pid(paths: Paths, name: str) -> int | None:
    """The pid of the running daemon ``name``, or None."""
    f = paths.pids / name
    if not f.exists():
        return None
    child = _SPAWNED.get(name)
    if child is not None and child.poll() is not None:
        del _SPAWNED[name]
        return None
    try:
        found = int(f.read_text())
        os.kill(found, 0)
    except (ValueError, ProcessLookupError, PermissionError):
        return None
    return found


def port_in_use(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def start(
    paths: Paths,
    name: str,
    argv: Sequence[str],
    *,
    ports: Sequence[int],
    env: Mapping[str, str] | None = None,
) -> None:
    """Start ``argv`` as the daemon ``name`` unless it runs already (``env`` added to this environment)."""
    if pid(paths, name) is not None:
        return
    taken = [port for port in ports if port_in_use(port)]
    if taken:
        raise RuntimeError(
            f"cannot start {name}: port {', '.join(map(str, taken))} on 127.0.0.1 is held by a process "
            f"this state dir ({paths.root}) did not start; stop it, or set INFERENCE_API_PORT/INFERENCE_ETCD_PORT"
        )
    paths.logs.mkdir(parents=True, exist_ok=True)
    paths.pids.mkdir(parents=True, exist_ok=True)
    # The child holds its own copy of the log descriptor; the parent closes its copy at once.
    with (paths.logs / f"{name}.log").open("ab") as out:
        proc = subprocess.Popen(
            list(argv),
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            cwd=paths.root,
            env={**os.environ, **env} if env else None,
        )
    _SPAWNED[name] = proc
    (paths.pids / name).write_text(str(proc.pid))
    log(f"started {name} (pid {proc.pid}), log {paths.logs / (name + '.log')}")


def stop(paths: Paths, name: str) -> None:
    """SIGTERM to the daemon's process group, SIGKILL after 15 s; its pid file removed."""
    found = pid(paths, name)
    if found is None:
        (paths.pids / name).unlink(missing_ok=True)
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(found, signal.SIGTERM)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and pid(paths, name) is not None:
        time.sleep(0.1)
    if pid(paths, name) is not None:
        os.killpg(found, signal.SIGKILL)
    child = _SPAWNED.pop(name, None)
    if child is not None:
        child.wait(timeout=15)
    (paths.pids / name).unlink(missing_ok=True)
    log(f"stopped {name}")


def wait(what: str, check: Callable[[], bool], timeout: float, *, logs: object = "the logs") -> None:
    """Poll ``check`` every 0.2 s until it holds; RuntimeError after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.2)
    raise RuntimeError(f"{what} not ready after {timeout:.0f}s; see {logs}")


@contextlib.contextmanager
def locked(paths: Paths) -> Iterator[None]:
    """One ``up``/``down`` at a time on this state directory."""
    paths.root.mkdir(parents=True, exist_ok=True)
    with (paths.root / ".lock").open("w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)
