"""Go modules from the module proxy: the source trees the components take files from, or build.

``download_module`` runs ``go mod download -json <module>@<version>`` from an empty directory with GOFLAGS
and GOWORK cleared, so neither a go.mod nearby nor a ``-mod=...`` in the environment changes what it does,
and returns the extracted module's directory in the Go module cache.
"""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import subprocess
import tempfile


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
