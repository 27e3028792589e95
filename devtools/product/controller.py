"""``python -m controller`` as a local process: its command line in one place, started detached
(devtools/procs.py: pid and log files in ``log_dir``), ready when its ``/readyz`` answers 200.

The demo (fixed ports, one ``controller.log``), the e2e platform and its leader-election replicas (a
free pair of ports and a new ``<name>-<n>.log`` at each start) and bench.scale (``--workers``, the
restart time) all start it here.
"""

from __future__ import annotations

import pathlib
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass

from devtools import procs

REPO = pathlib.Path(__file__).resolve().parents[2]
NAMESPACE = "d8-inference"
SETTINGS_CONFIGMAP = "inference-settings"


@dataclass
class ControllerProcess:
    """One controller process; ``start`` again after ``stop`` or ``kill`` starts a new one."""

    kubeconfig: pathlib.Path  # the controller's ServiceAccount (devtools/cluster/identity.py), or admin's
    env: dict[str, str]
    log_dir: pathlib.Path  # its log, pid and command-line files
    args: tuple[str, ...] = ("--no-leader-elect",)
    name: str = "controller"
    ports: tuple[int, int] | None = None  # (metrics, health); a free pair at each start when None
    log_each_start: bool = True  # <name>-<n>.log for the n-th start; else one <name>.log
    ready_timeout: float = 90
    python: str = sys.executable
    cwd: pathlib.Path = REPO
    namespace: str = NAMESPACE
    settings_configmap: str = SETTINGS_CONFIGMAP
    metrics_port: int = 0
    health_port: int = 0
    starts: int = 0
    background: procs.Background | None = None

    def argv(self) -> list[str]:
        return [
            self.python, "-m", "controller",
            "--kubeconfig", str(self.kubeconfig),
            "--namespace", self.namespace,
            "--settings-configmap", self.settings_configmap,
            *self.args,
            "--metrics-port", str(self.metrics_port),
            "--health-port", str(self.health_port),
            "--bind-address", "127.0.0.1",
        ]  # fmt: skip

    @property
    def proc(self) -> subprocess.Popen[bytes] | None:
        return self.background.process if self.background is not None else None

    @property
    def log(self) -> pathlib.Path:
        suffix = f"-{self.starts}" if self.log_each_start else ""
        return self.log_dir / f"{self.name}{suffix}.log"

    def start(self) -> float:
        """Start it and wait until it is ready; the seconds that took. ProcessError if it exits first
        or is not ready after ``ready_timeout``."""
        self.metrics_port, self.health_port = self.ports or (procs.free_port(), procs.free_port())
        self.starts += 1
        t0 = time.monotonic()
        bg = procs.start(self.name, self.argv(), state=self.log_dir, cwd=self.cwd, env=self.env, log=self.log)
        self.background = bg
        procs.wait_ready(self.name, bg, self.ready, timeout=self.ready_timeout)
        return time.monotonic() - t0

    def ready(self) -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.health_port}/readyz", timeout=2) as r:
                return bool(r.status == 200)
        except OSError:
            return False

    def metrics(self, timeout: float = 5) -> str:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=timeout) as r:
            return str(r.read().decode())

    def kill(self) -> None:
        """SIGKILL: no graceful shutdown, as when a node dies."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)

    def stop(self, grace: float = 15) -> None:
        """SIGTERM to its session, SIGKILL after ``grace`` seconds; reaped."""
        procs.stop(self.name, state=self.log_dir, grace=grace)
        if self.proc is not None:
            if self.proc.poll() is None:  # its pid file named another process, or none: end ours directly
                self.proc.kill()
            self.proc.wait(timeout=15)

    def restart(self) -> None:
        self.kill()
        self.start()
