"""Go modules from the module proxy: the source trees the components take files from, or build.

``download_module`` runs ``go mod download -json <module>@<version>`` from an empty directory with GOFLAGS
and GOWORK cleared, so neither a go.mod nearby nor a ``-mod=...`` in the environment changes what it does,
and returns the extracted module's directory in the Go module cache.

``build_in_module`` builds packages of a module in that tree (its own go.mod, go.sum and replaces), under
the cache's build lock, each binary renamed into place (Prometheus, KEDA).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import pathlib
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Mapping, Sequence


class GoModuleError(RuntimeError):
    """A Go module could not be fetched (no ``go``, an unknown version, no network)."""


def download_module(module: str, version: str, *, go: str = "go") -> pathlib.Path:
    """The module's extracted source tree in the Go module cache, downloaded when missing."""
    if shutil.which(go) is None:
        raise GoModuleError(f"`go` is not on PATH: {module} comes from the Go module proxy")
    env = {**os.environ, "GOFLAGS": "", "GOWORK": "off", "GO111MODULE": "on"}
    with tempfile.TemporaryDirectory(prefix="gomod-") as cwd:
        proc = subprocess.run(
            [go, "mod", "download", "-json", f"{module}@{version}"],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
    try:
        info = json.loads(proc.stdout or "{}")
    except json.JSONDecodeError as e:
        raise GoModuleError(f"go mod download: unreadable output: {proc.stdout[:200]!r}") from e
    if proc.returncode != 0 or info.get("Error") or not info.get("Dir"):
        why = info.get("Error") or proc.stderr
        raise GoModuleError(f"go mod download {module}@{version} failed: {why}")
    return pathlib.Path(info["Dir"])


def go_build_argv(
    package: str, out: pathlib.Path, *, ldflags: str = "-s -w", tags: tuple[str, ...] = ()
) -> list[str]:
    """The command that builds one package of a module into ``out``: the lowest CPU priority, one package at
    a time (the machine is shared), no file paths of this machine in the binary."""
    tag_args = ["-tags", ",".join(tags)] if tags else []
    return ["nice", "-n", "19", "go", "build", "-p", "1", "-trimpath", *tag_args, "-ldflags", ldflags,
            "-o", str(out), package]  # fmt: skip


def build_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The environment of a build in a module's own tree: static binaries, the module's go.mod and go.sum
    as they are (no ``-mod=mod`` from the caller's GOFLAGS, no go.work)."""
    return {**environ, "CGO_ENABLED": "0", "GOFLAGS": "-buildvcs=false", "GOWORK": "off", "GO111MODULE": "on"}


@contextlib.contextmanager
def build_lock(cache: pathlib.Path) -> Iterator[None]:
    """The cache's build lock (devtools/cluster/build.sh takes the same one): one Go build at a time."""
    cache.mkdir(parents=True, exist_ok=True)
    with (cache / ".build.lock").open("w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def build_in_module(
    module: str,
    version: str,
    builds: Sequence[tuple[str, pathlib.Path, str]],
    *,
    cache: pathlib.Path,
    environ: Mapping[str, str],
    tags: tuple[str, ...] = (),
) -> None:
    """Build ``(package, binary, ldflags)`` of ``module@version`` in the module's own tree, so its go.mod,
    go.sum and replace directives hold as upstream tested them (``go get`` of its package into a scratch
    module would drop the replaces). Binaries already there are kept; each new one is written beside
    its path and renamed into place, under the cache's build lock. GoModuleError when a step fails."""
    missing = [b for b in builds if not b[1].is_file()]
    if not missing:
        return
    if shutil.which("go") is None:
        raise GoModuleError(f"`go` is not on PATH: {module} is built from the Go module proxy")
    with build_lock(cache):
        src = download_module(module, version)
        env = build_env(environ)
        for package, binary, ldflags in missing:
            if binary.is_file():  # another session built it while we waited
                continue
            binary.parent.mkdir(parents=True, exist_ok=True)
            tmp = binary.with_name(binary.name + ".tmp")
            step = go_build_argv(package, tmp, ldflags=ldflags, tags=tags)
            proc = subprocess.run(step, cwd=src, env=env, capture_output=True, text=True, check=False)
            if proc.returncode != 0:
                tmp.unlink(missing_ok=True)
                raise GoModuleError(f"{' '.join(step)} (in {src}) failed:\n{proc.stderr[-3000:]}")
            tmp.rename(binary)
