"""Background processes of the demo: started detached, logged and tracked by pid files.

Each process runs in its own session (so it survives ``make``), writes stdout and stderr to
``<state>/<name>.log`` and its pid to ``<state>/<name>.pid``, with the command line beside it in
``<state>/<name>.cmd`` so that ``stop`` never signals a pid that has since been reused by someone
else. Used by the demo (hack/demo), the add-ons of the local plane (devtools/cluster/components)
and the product's processes (devtools/product).
"""

from __future__ import annotations

import contextlib
import os
import pathlib
import re
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass


class ProcessError(RuntimeError):
    """A background process exited early or did not say what we waited for."""


@dataclass(frozen=True)
class Background:
    """A started process. ``process`` is the handle while this interpreter started it (reap it with
    ``process.wait()`` after ``stop`` if the caller lives on; the demo exits and leaves that to init)."""

    name: str
    pid: int
    log: pathlib.Path
    process: subprocess.Popen[bytes] | None = None


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        port: int = s.getsockname()[1]
        return port


def start(
    name: str,
    argv: Sequence[str],
    *,
    state: pathlib.Path,
    cwd: pathlib.Path,
    env: Mapping[str, str] | None = None,
    log: pathlib.Path | None = None,
) -> Background:
    """Start ``argv`` detached, logging to ``log`` (default ``<state>/<name>.log``, truncated)."""
    state.mkdir(parents=True, exist_ok=True)
    log = log or state / f"{name}.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            list(argv),
            cwd=cwd,
            env=dict(os.environ if env is None else env),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    (state / f"{name}.pid").write_text(f"{proc.pid}\n")
    (state / f"{name}.cmd").write_text("\0".join(argv))
    return Background(name=name, pid=proc.pid, log=log, process=proc)


def _cmdline(pid: int) -> str:
    try:
        return pathlib.Path(f"/proc/{pid}/cmdline").read_bytes().rstrip(b"\0").decode(errors="replace")
    except OSError:
        return ""


def alive(pid: int) -> bool:
    """The process exists and is not a zombie."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie child of ours still answers kill(0); /proc says it is gone.
    status = pathlib.Path(f"/proc/{pid}/stat")
    try:
        return status.read_text().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def running(name: str, *, state: pathlib.Path) -> int | None:
    """The pid of our process ``name`` if it still runs (and is still the command we started)."""
    pid_file, cmd_file = state / f"{name}.pid", state / f"{name}.cmd"
    try:
        pid = int(pid_file.read_text().strip())
        cmd = cmd_file.read_text()
    except (OSError, ValueError):
        return None
    if not alive(pid) or _cmdline(pid) != cmd:
        return None
    return pid


def wait_ready(name: str, bg: Background, ready: Callable[[], bool], *, timeout: float) -> None:
    """Poll ``ready`` every 0.1 s until it says so. ProcessError if the process exits first (with the
    last lines of its log) or is not ready after ``timeout`` seconds."""
    t0 = time.monotonic()
    while not ready():
        if not alive(bg.pid):
            raise ProcessError(f"{name} exited; last lines of {bg.log}:\n{tail(bg.log.read_text())}")
        if time.monotonic() - t0 > timeout:
            raise ProcessError(f"{name} is not ready after {timeout:.0f}s; see {bg.log}")
        time.sleep(0.1)


def wait_for_line(bg: Background, pattern: str, *, timeout: float) -> re.Match[str]:
    """Wait until the log of ``bg`` has a line matching ``pattern``; fail early if it exits."""
    regex = re.compile(pattern)
    deadline = time.monotonic() + timeout
    while True:
        text = bg.log.read_text(errors="replace") if bg.log.exists() else ""
        for line in text.splitlines():
            match = regex.search(line)
            if match:
                return match
        if not alive(bg.pid):
            raise ProcessError(f"{bg.name} exited before it was ready; last lines of {bg.log}:\n{tail(text)}")
        if time.monotonic() > deadline:
            raise ProcessError(f"{bg.name} did not print /{pattern}/ within {timeout:.0f}s:\n{tail(text)}")
        time.sleep(0.2)


def has_line(bg: Background, pattern: str) -> bool:
    """Whether the log of ``bg`` has a line matching ``pattern`` now."""
    text = bg.log.read_text(errors="replace") if bg.log.exists() else ""
    return any(re.search(pattern, line) for line in text.splitlines())


def tail(text: str, lines: int = 20) -> str:
    return "\n".join(text.splitlines()[-lines:])


def stop(name: str, *, state: pathlib.Path, grace: float = 10.0) -> bool:
    """Stop our process ``name`` (SIGTERM to its session, SIGKILL after ``grace``); True if it ran."""
    pid = running(name, state=state)
    for suffix in ("pid", "cmd"):
        (state / f"{name}.{suffix}").unlink(missing_ok=True)
    if pid is None:
        return False
    try:
        os.killpg(pid, signal.SIGTERM)  # the session we started: the process and its children only
    except ProcessLookupError:
        return False
    deadline = time.monotonic() + grace
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    if alive(pid):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)
    return True
