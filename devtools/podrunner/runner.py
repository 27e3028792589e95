"""Runs one rendered pod's containers as processes on this machine. I/O.

``PodRunner(pod_spec, objects, images, workdir=...)``:

- ``run_init()`` runs the init containers one after another, each to its end; one that exits
  non-zero (or outlives ``timeout``) raises ``InitContainerError`` with its exit code and log tail,
  and nothing after it runs (the kubelet would restart it: the plane shows the pod failing).
- ``start()`` starts the containers; ``update_secret()`` rewrites a changed Secret's volumes the
  kubelet's way; ``statuses()`` reports each one (running, or its exit code: a
  container that died is what a plane shows as a failing pod); ``stop()`` ends every container's
  process group (SIGTERM, then SIGKILL after ``grace`` seconds) and removes the memory volumes.

**Each container** is one process group (its own session) and one private mount namespace:

    unshare --mount --propagation private sh -c '<mount the volumes>; cd <workingDir>; exec "$@"' -- ARGV

Each volume mount is ``mount --bind <host dir>[/<subPath>] <mountPath>`` (``-o remount,bind,ro``
for ``readOnly``), parents before children, so the process sees the paths the pod renders
(``/models``, ``/etc/inference/tls``, ``/home/inference``, ``/dev/shm``) and nothing else moves on
the host. A mount point missing on the host is created there as an empty directory (a private mount
namespace shares the file system; only mounts are private). Needs root (``unshare -m``).

Output goes to ``<workdir>/logs/<container>.log`` (the kubelet's container log).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shlex
import shutil
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from devtools.podrunner import volumes as vol
from devtools.podrunner.launch import (
    FETCHER_PORT_ENV,
    ImageRun,
    Launch,
    LaunchError,
    PodObjects,
    listen_port,
    plan_launch,
)

SCRIPT_NAME = "podrunner"


class InitContainerError(RuntimeError):
    """An init container exited non-zero or did not end in time."""

    def __init__(self, name: str, exit_code: int | None, log_tail: str) -> None:
        super().__init__(f"init container {name} {_ended(exit_code)}:\n{log_tail}")
        self.name = name
        self.exit_code = exit_code


@dataclass(frozen=True)
class ContainerStatus:
    name: str
    pid: int
    running: bool
    exit_code: int | None  # 128 + N when signal N ended it, as the kubelet reports it
    log: Path


def port_taken(port: int, host: str = "127.0.0.1") -> bool:
    """Whether something already listens on ``port`` (a bind on all addresses would fail)."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("0.0.0.0", port))
        except OSError:
            return True
    return False


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


_HELD: set[int] = set()
"""Ports given to the launches of this process and not released yet. A runtime binds its port only once
its model is loaded (about a minute for vLLM), so a bind test alone gave two pods started together,
two replicas of one order, the same rendered port."""
_HELD_LOCK = threading.Lock()


def _taken(port: int) -> bool:
    return port in _HELD or port_taken(port)


def _free() -> int:
    while (port := free_port()) in _HELD:
        pass
    return port


def _ports(launch: Launch) -> set[int]:
    """The ports ``launch`` listens on: its ``--port`` and the fetcher's metrics port."""
    out = {p for p in (listen_port(launch),) if p}
    fetcher = launch.env.get(FETCHER_PORT_ENV, "")
    if fetcher.isdigit() and int(fetcher):
        out.add(int(fetcher))
    return out


OMP_BIND_ENV = "VLLM_CPU_OMP_THREADS_BIND"
_CPU_USERS: dict[int, int] = {}
"""Pods per CPU of this process's affinity. vLLM's CPU build binds its engine's OpenMP threads to
the CPUs it may use ("auto": all but one reserved); two pods here both took CPU 0, and the second
engine, spinning on the core the first one computed on, never finished starting (more than 4 min).
Each pod therefore gets the least used CPU, as a kubelet's static CPU manager gives each pod its own
cpuset: its processes start with that CPU as their affinity, and it is their explicit
``VLLM_CPU_OMP_THREADS_BIND`` (a container that sets it keeps its own). With the variable alone the
second pod's API server still ran on CPU 0 beside the first engine's spinning worker and got no CPU."""


def _claim_cpu() -> int:
    with _HELD_LOCK:
        cpus = sorted(os.sched_getaffinity(0))
        cpu = min(cpus, key=lambda c: (_CPU_USERS.get(c, 0), c))
        _CPU_USERS[cpu] = _CPU_USERS.get(cpu, 0) + 1
        return cpu


def _release_cpu(cpu: int) -> None:
    with _HELD_LOCK:
        _CPU_USERS[cpu] = max(0, _CPU_USERS.get(cpu, 0) - 1)


def mount_script(launch: Launch, volumes: Mapping[str, Path]) -> str:
    """The shell program that mounts ``launch``'s volumes and execs its argv (module doc)."""
    lines = ["set -e"]
    for m in sorted(launch.mounts, key=lambda m: m.path.rstrip("/").count("/")):
        src = volumes[m.volume] / m.sub_path if m.sub_path else volumes[m.volume]
        dst = shlex.quote(m.path)
        if src.is_file():
            lines.append(f"mkdir -p {shlex.quote(str(Path(m.path).parent))}; [ -e {dst} ] || : > {dst}")
        else:
            src.mkdir(parents=True, exist_ok=True)
            lines.append(f"mkdir -p {dst}")
        lines.append(f"mount --bind {shlex.quote(str(src))} {dst}")
        if m.read_only:
            lines.append(f"mount -o remount,bind,ro {dst}")
    lines.append(f'cd {shlex.quote(launch.working_dir)}; exec "$@"')
    return "\n".join(lines)


def process_argv(launch: Launch, volumes: Mapping[str, Path]) -> list[str]:
    unshare = shutil.which("unshare") or "/usr/bin/unshare"
    return [
        unshare,
        "--mount",
        "--propagation",
        "private",
        "/bin/sh",
        "-c",
        mount_script(launch, volumes),
        SCRIPT_NAME,
        *launch.argv,
    ]


def group_members(pgid: int) -> list[int]:
    """The live processes of process group ``pgid`` (zombies aside)."""
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError, ValueError, IndexError):
            stat = (entry / "stat").read_text()
            fields = stat[stat.rindex(")") + 2 :].split()
            if int(fields[2]) == pgid and fields[0] != "Z":
                out.append(int(entry.name))
    return out


def rss_bytes(pgid: int) -> int:
    """Resident memory of the process group's processes."""
    total = 0
    for pid in group_members(pgid):
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
    return total


class PodRunner:
    """One pod (module doc)."""

    def __init__(
        self,
        pod_spec: Mapping[str, Any],
        objects: PodObjects,
        images: Mapping[str, ImageRun],
        *,
        workdir: Path,
        claims: Mapping[str, Path] | None = None,
    ) -> None:
        self.spec = pod_spec
        self.objects = objects
        self.images = images
        self.workdir = workdir
        self.claims = dict(claims or {})
        self.volumes: dict[str, Path] = {}
        self._scratch: list[Path] = []
        self.launches: dict[str, Launch] = {}
        self.processes: dict[str, subprocess.Popen[bytes]] = {}
        self.durations: dict[str, float] = {}
        self.cpu: int | None = None  # this pod's CPU (``OMP_BIND_ENV``), claimed at its first start
        (workdir / "logs").mkdir(parents=True, exist_ok=True)

    def prepare(self) -> None:
        """The volumes as directories (once); LaunchError while a Secret or ConfigMap they need is missing."""
        if not self.volumes:
            self.volumes, self._scratch = vol.materialize(
                list(self.spec.get("volumes") or ()), self.objects, self.workdir, self.claims
            )

    def log(self, name: str) -> Path:
        return self.workdir / "logs" / f"{name}.log"

    def log_tail(self, name: str, lines: int = 40) -> str:
        with contextlib.suppress(OSError):
            return "\n".join(self.log(name).read_text(errors="replace").splitlines()[-lines:])
        return ""

    def _spawn(self, container: Mapping[str, Any]) -> subprocess.Popen[bytes]:
        if os.geteuid() != 0:
            raise LaunchError("the pod runner needs root: each container runs under `unshare --mount`")
        with _HELD_LOCK:
            before = self.launches.get(str(container["name"]))
            if before is not None:
                _HELD.difference_update(_ports(before))
            launch = plan_launch(container, self.objects, self.images, taken=_taken, free=_free)
            _HELD.update(_ports(launch))
        if OMP_BIND_ENV not in launch.env:
            if self.cpu is None:
                self.cpu = _claim_cpu()
            launch = dataclasses.replace(
                launch,
                env={**launch.env, OMP_BIND_ENV: str(self.cpu)},
                changes=(*launch.changes, f"{OMP_BIND_ENV}={self.cpu} (this pod's CPU)"),
            )
        self.launches[launch.name] = launch
        with self.log(launch.name).open("ab") as out:
            proc = subprocess.Popen(
                process_argv(launch, self.volumes),
                env=dict(launch.env),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd="/",
                start_new_session=True,
                preexec_fn=None if self.cpu is None else partial(os.sched_setaffinity, 0, {self.cpu}),
            )
        self.processes[launch.name] = proc
        return proc

    def run_init(self, timeout: float = 600.0) -> None:
        """Each init container in order, to its end (module doc)."""
        self.prepare()
        for container in self.spec.get("initContainers") or ():
            began = time.monotonic()
            proc = self._spawn(container)
            try:
                proc.wait(timeout=max(1.0, timeout - (time.monotonic() - began)))
            except subprocess.TimeoutExpired:
                self._end(proc, grace=5)
                raise InitContainerError(container["name"], None, self.log_tail(container["name"])) from None
            finally:
                self.durations[container["name"]] = time.monotonic() - began
            if proc.returncode != 0:
                code = _exit_code(proc.returncode)
                raise InitContainerError(container["name"], code, self.log_tail(container["name"]))

    def start(self) -> None:
        """Start the containers (after ``run_init``)."""
        self.prepare()
        for container in self.spec["containers"]:
            self._spawn(container)

    def restart(self, name: str) -> None:
        """Start container ``name`` again after its process ended (the kubelet's restart policy
        ``Always``); its log goes on in the same file."""
        proc = self.processes.get(name)
        if proc is not None and proc.poll() is None:
            raise RuntimeError(f"container {name} is still running")
        (container,) = [c for c in self.spec["containers"] if c["name"] == name]
        self._spawn(container)

    def statuses(self) -> dict[str, ContainerStatus]:
        names = [c["name"] for c in self.spec["containers"]]
        out = {}
        for name in names:
            proc = self.processes.get(name)
            if proc is None:
                continue
            code = proc.poll()
            out[name] = ContainerStatus(
                name, proc.pid, code is None, None if code is None else _exit_code(code), self.log(name)
            )
        return out

    def update_secret(self, name: str, data: Mapping[str, str]) -> int:
        """The Secret ``name`` changed (a cert-manager rotation): rewrite each volume of it as the
        kubelet does (``volumes.update``: a new directory, ``..data`` swapped). Environment variables
        keep their values, as in a pod. Returns how many volumes changed."""
        changed = 0
        for v in self.spec.get("volumes") or ():
            if v.get("secret", {}).get("secretName") == name and v["name"] in self.volumes:
                vol.update(self.volumes[v["name"]], data, v["secret"], what=f"Secret {name!r}")
                changed += 1
        return changed

    def pgids(self) -> list[int]:
        return [p.pid for p in self.processes.values()]

    def rss_bytes(self, name: str) -> int:
        return rss_bytes(self.processes[name].pid)

    def stop(self, grace: float = 30.0) -> None:
        for proc in self.processes.values():
            self._end(proc, grace=grace)
        with _HELD_LOCK:
            for launch in self.launches.values():
                _HELD.difference_update(_ports(launch))
        if self.cpu is not None:
            _release_cpu(self.cpu)
            self.cpu = None
        vol.remove(self._scratch)
        self._scratch = []

    @staticmethod
    def _end(proc: subprocess.Popen[bytes], *, grace: float) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and (proc.poll() is None or group_members(proc.pid)):
            time.sleep(0.2)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=10)


@contextlib.contextmanager
def running(runner: PodRunner, *, init_timeout: float = 600.0) -> Iterator[PodRunner]:
    """Init containers, then the containers; stopped on the way out, whatever happened."""
    try:
        runner.run_init(timeout=init_timeout)
        runner.start()
        yield runner
    finally:
        runner.stop()


def _exit_code(returncode: int) -> int:
    return 128 - returncode if returncode < 0 else returncode


def _ended(code: int | None) -> str:
    return "did not end in time" if code is None else f"exited with {code}"
