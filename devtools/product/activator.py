"""``python -m activator`` as a local process: its command line in one place, started detached
(devtools/procs.py: pid and log files in ``log_dir``), ready when its admin ``/readyz`` answers 200
(it has listed the orders' Secrets and EndpointSlices).

On the local plane it runs under its own ServiceAccount's kubeconfig (devtools/cluster/identity.py)
with the shipped RBAC, listens on an address the API server accepts in an EndpointSlice (not
loopback: devtools/cluster/netaddr.py) and forwards every request to the runtime stand-in's entry
address (``--upstream-address-override``), with the order's SNI, verified against the platform CA.
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


@dataclass
class ActivatorProcess:
    """One activator process; ``start`` again after ``stop`` starts a new one on new ports."""

    kubeconfig: pathlib.Path  # its ServiceAccount's
    ca_file: pathlib.Path  # the platform CA the orders' replicas' certificates chain to
    upstream: str  # HOST:PORT every forward goes to (the runtime stand-in's entry address)
    host: str  # both listeners' address
    env: dict[str, str]
    log_dir: pathlib.Path
    max_hold_seconds: float = 300.0
    retry_after_seconds: int = 10
    args: tuple[str, ...] = ()
    name: str = "activator"
    ready_timeout: float = 60
    python: str = sys.executable
    cwd: pathlib.Path = REPO
    port: int = 0  # the HTTPS listener's, chosen at start
    admin_port: int = 0
    background: procs.Background | None = None

    def argv(self) -> list[str]:
        return [
            self.python, "-m", "activator",
            "--kubeconfig", str(self.kubeconfig),
            "--upstream-ca-file", str(self.ca_file),
            "--upstream-address-override", self.upstream,
            "--host", self.host, "--port", str(self.port),
            "--admin-host", self.host, "--admin-port", str(self.admin_port),
            "--max-hold-seconds", str(self.max_hold_seconds),
            "--retry-after-seconds", str(self.retry_after_seconds),
            *self.args,
        ]  # fmt: skip

    @property
    def proc(self) -> subprocess.Popen[bytes] | None:
        return self.background.process if self.background is not None else None

    @property
    def address(self) -> str:
        """``HOST:PORT`` of the HTTPS listener."""
        return f"{self.host}:{self.port}"

    @property
    def admin_url(self) -> str:
        """``http://HOST:PORT`` of ``/metrics``, ``/healthz`` and ``/readyz``."""
        return f"http://{self.host}:{self.admin_port}"

    def start(self) -> float:
        """Start it and wait until it is ready; the seconds that took. ProcessError if it exits first
        or is not ready after ``ready_timeout``."""
        self.port, self.admin_port = procs.free_port(self.host), procs.free_port(self.host)
        t0 = time.monotonic()
        bg = procs.start(self.name, self.argv(), state=self.log_dir, cwd=self.cwd, env=self.env)
        self.background = bg
        procs.wait_ready(self.name, bg, self.ready, timeout=self.ready_timeout)
        return time.monotonic() - t0

    def ready(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.admin_url}/readyz", timeout=2) as r:
                return bool(r.status == 200)
        except OSError:
            return False

    def metrics(self, timeout: float = 5) -> str:
        with urllib.request.urlopen(f"{self.admin_url}/metrics", timeout=timeout) as r:
            return str(r.read().decode())

    def stop(self, grace: float = 10) -> None:
        """SIGTERM to its session, SIGKILL after ``grace`` seconds; reaped."""
        procs.stop(self.name, state=self.log_dir, grace=grace)
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.wait(timeout=15)
