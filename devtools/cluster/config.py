"""Where the local plane lives and what it is pinned to: read once from the environment.

- ``STATE`` (``INFERENCE_CLUSTER_DIR``, default ``.cluster/``): pki/, etcd/, logs/, pids/, kubeconfigs;
- the ports: etcd at ``INFERENCE_ETCD_PORT`` (peer port +10), kube-apiserver at ``INFERENCE_API_PORT``,
  then the controller-manager, the scheduler and kwok on the three ports above it;
- ``PROFILE`` (``INFERENCE_PLANE_PROFILE``): devtools/cluster/tuning.py;
- ``METRICS`` (``INFERENCE_PLANE_METRICS=1``): ``up`` starts Prometheus and KEDA too (``up --metrics``);
  they take the ports ``INFERENCE_API_PORT`` +4..+10 (devtools/cluster/components/base.py ``Plane``);
- the pinned versions (versions.env) and the cache of built binaries, keyed by version:
  ``$INFERENCE_CACHE``, else ``$XDG_CACHE_HOME/inference-control-plane`` or ``~/.cache/...``.
"""

from __future__ import annotations

import os
import pathlib
import sys
from collections.abc import Mapping
from dataclasses import dataclass

REPO = pathlib.Path(__file__).resolve().parents[2]
HERE = pathlib.Path(__file__).resolve().parent
VERSIONS_ENV = HERE / "versions.env"
STATE = pathlib.Path(os.environ.get("INFERENCE_CLUSTER_DIR", REPO / ".cluster"))

ETCD_PORT = int(os.environ.get("INFERENCE_ETCD_PORT", "23790"))
API_PORT = int(os.environ.get("INFERENCE_API_PORT", "16443"))
KCM_PORT, SCHED_PORT, KWOK_PORT = API_PORT + 1, API_PORT + 2, API_PORT + 3
SERVICE_CIDR = "10.96.0.0/16"
# devtools/cluster/tuning.py: "scale" for a thousand KWOK nodes (bench.scale); "default" for the tests.
PROFILE = os.environ.get("INFERENCE_PLANE_PROFILE", "default")
METRICS = os.environ.get("INFERENCE_PLANE_METRICS", "").lower() not in ("", "0", "false", "no")


class VersionError(RuntimeError):
    """A version is not pinned in versions.env."""


def log(msg: str) -> None:
    print(f"[cluster] {msg}", file=sys.stderr, flush=True)


def read_versions(text: str) -> dict[str, str]:
    """``KEY=VALUE`` lines of versions.env (comments and blanks ignored)."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.partition("=")
        out[key.strip()] = value.strip().strip('"')
    return out


def versions() -> dict[str, str]:
    return read_versions(VERSIONS_ENV.read_text())


def pinned_version(key: str, versions_env: pathlib.Path = VERSIONS_ENV) -> str:
    version = read_versions(versions_env.read_text()).get(key)
    if not version:
        raise VersionError(f"{key} is not set in {versions_env}")
    return version


def cache_root(env: Mapping[str, str] | None = None) -> pathlib.Path:
    """The cache of devtools/cluster/build.sh: $INFERENCE_CACHE, else $XDG_CACHE_HOME or ~/.cache."""
    env = os.environ if env is None else env
    if env.get("INFERENCE_CACHE"):
        return pathlib.Path(env["INFERENCE_CACHE"])
    xdg = env.get("XDG_CACHE_HOME")
    base = pathlib.Path(xdg) if xdg else pathlib.Path.home() / ".cache"
    return base / "inference-control-plane"


@dataclass(frozen=True)
class Paths:
    """The files of one plane's state directory."""

    root: pathlib.Path

    @property
    def pki(self) -> pathlib.Path:
        return self.root / "pki"

    @property
    def logs(self) -> pathlib.Path:
        return self.root / "logs"

    @property
    def pids(self) -> pathlib.Path:
        return self.root / "pids"

    @property
    def kubeconfig(self) -> pathlib.Path:
        return self.root / "kubeconfig"

    def component_kubeconfig(self, name: str) -> pathlib.Path:
        return self.root / f"{name}.kubeconfig"


P = Paths(STATE)


def server_url() -> str:
    return f"https://127.0.0.1:{API_PORT}"
