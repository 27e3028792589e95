"""Start and stop the local control plane from the built binaries: no containers, no kwokctl.

State lives in ``.cluster/`` (git-ignored, devtools/cluster/config.py): pki/, etcd/, logs/, pids/,
kubeconfigs. ``up`` is idempotent: a healthy running plane is reused as it is, so a warm ``up`` takes
about a second. The daemons are devtools/cluster/components (``PLANE``, in start order), their
processes devtools/cluster/daemons.py, the fleet devtools/cluster/fleet_apply.py.
"""

from __future__ import annotations

import pathlib
import time
from functools import partial

from devtools.cluster import daemons, fleet_apply
from devtools.cluster.components import PLANE
from devtools.cluster.components.base import Plane, build_plane_binaries
from devtools.cluster.components.kube import api_ready as _api_ready
from devtools.cluster.config import API_PORT, ETCD_PORT, PROFILE, P, log, server_url
from devtools.cluster.credentials import make_pki
from devtools.cluster.tuning import tuning

COMPONENTS = tuple(c.name for c in PLANE)


def build() -> pathlib.Path:
    """Run build.sh (builds only what is missing) and return the bin directory."""
    return build_plane_binaries()


def plane(bin_dir: pathlib.Path) -> Plane:
    return Plane(P, bin_dir, etcd_port=ETCD_PORT, api_port=API_PORT, tuning=tuning(PROFILE))


def api_ready(timeout: float = 2.0) -> bool:
    return _api_ready(P, server_url(), timeout)


def start(bin_dir: pathlib.Path) -> None:
    """Start each daemon that is not running, in order, waiting for those with a readiness check."""
    pl = plane(bin_dir)
    make_pki(P, server=server_url())
    (P.root / "profile").write_text(pl.tuning.profile)
    for component in PLANE:
        component.start(pl)
        if component.ready_timeout:
            daemons.wait(component.name, partial(component.ready, pl), component.ready_timeout, logs=P.logs)


def apply_fleet(bin_dir: pathlib.Path) -> None:
    fleet_apply.apply_fleet(bin_dir, P)


def up() -> None:
    t0 = time.monotonic()
    bin_dir = build()
    with daemons.locked(P):
        if all(daemons.pid(P, c) for c in COMPONENTS) and api_ready():
            log("control plane already running")
        else:
            start(bin_dir)
        apply_fleet(bin_dir)
    log(
        f"ready in {time.monotonic() - t0:.1f}s: export KUBECONFIG={P.kubeconfig}; kubectl at {bin_dir / 'kubectl'}"
    )


def down() -> None:
    with daemons.locked(P):
        for name in reversed(COMPONENTS):
            daemons.stop(P, name)


def stop_component(name: str) -> None:
    """Stop one component of a running plane (SIGTERM to its process group), leaving the others."""
    if name not in COMPONENTS:
        raise ValueError(f"unknown component {name!r}; one of {', '.join(COMPONENTS)}")
    with daemons.locked(P):
        daemons.stop(P, name)


def restart_component(name: str, *, down_seconds: float = 0.0, bin_dir: pathlib.Path | None = None) -> None:
    """Restart one component of a running plane: stop it, wait ``down_seconds``, start what is
    stopped again with the same flags (``start`` skips the running ones) and wait until it serves.
    For fault injection (bench/chaos): etcd and kube-apiserver keep their data and certificates."""
    stop_component(name)
    time.sleep(down_seconds)
    bin_dir = bin_dir or build()
    with daemons.locked(P):
        start(bin_dir)


def status() -> int:
    for name in COMPONENTS:
        pid = daemons.pid(P, name)
        print(f"{name:26s} {'running pid ' + str(pid) if pid else 'stopped'}")
    print(f"{'apiserver /readyz':26s} {'ok' if api_ready() else 'not ready'}")
    return 0 if all(daemons.pid(P, c) for c in COMPONENTS) else 1
