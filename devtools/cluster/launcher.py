"""Start and stop the local control plane from the built binaries: no containers, no kwokctl.

State lives in ``.cluster/`` (git-ignored, devtools/cluster/config.py): pki/, etcd/, logs/, pids/,
kubeconfigs. ``up`` is idempotent: a healthy running plane is reused as it is, so a warm ``up`` takes
about a second. The daemons are devtools/cluster/components (``PLANE``, in start order), their
processes devtools/cluster/daemons.py, the fleet devtools/cluster/fleet_apply.py.

The metrics add-ons, Prometheus and KEDA (devtools/cluster/components/prometheus.py and keda.py), are
plane daemons too but start only when asked: ``up(metrics=True)`` (``python -m devtools.cluster up
--metrics``, or ``INFERENCE_PLANE_METRICS=1``) or ``start_metrics`` on a running plane; ``down`` stops
them first. A plane brought up without them drops a KEDA APIService left registered with no adapter
behind it (the namespace controller cannot delete namespaces while an APIService is unavailable).
"""

from __future__ import annotations

import pathlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from devtools.cluster import daemons, fleet_apply
from devtools.cluster.components import PLANE, keda, prometheus
from devtools.cluster.components.base import Plane, build_plane_binaries
from devtools.cluster.components.kube import api_ready as _api_ready
from devtools.cluster.config import API_PORT, ETCD_PORT, METRICS, PROFILE, P, log, server_url
from devtools.cluster.credentials import make_pki
from devtools.cluster.tuning import tuning

COMPONENTS = tuple(c.name for c in PLANE)
METRICS_DAEMONS = (prometheus.PROCESS, *keda.DAEMONS)


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


@dataclass(frozen=True)
class Metrics:
    """Prometheus and KEDA on the plane: where to query Prometheus, and how long each took to be ready
    (0 when it was running already)."""

    prometheus_url: str
    prometheus_seconds: float
    keda_seconds: float
    started: bool  # False: both were running already


def metrics_running() -> bool:
    return all(daemons.pid(P, name) for name in METRICS_DAEMONS)


def _note_ready(check: Callable[[], bool], t0: float, timeout: float, out: list[float]) -> None:
    """Append the seconds from ``t0`` until ``check`` held (polled every 0.1 s), unless ``timeout`` passed."""
    while time.monotonic() - t0 < timeout:
        if check():
            out.append(time.monotonic() - t0)
            return
        time.sleep(0.1)


def _start_metrics(bin_dir: pathlib.Path, *, target: str | None) -> Metrics:
    pl = plane(bin_dir)
    if metrics_running() and prometheus.ready(pl) and keda.ready(pl):
        if target is not None:
            prometheus.set_scrape_target(pl, target)
        return Metrics(prometheus.address(pl), 0.0, 0.0, started=False)
    prometheus.build()  # both cached by version (python -m devtools.cluster build-metrics); built if missing
    keda.build()
    t0 = time.monotonic()
    prometheus.start(pl, target=target)
    # Prometheus comes up while KEDA's objects are applied; a thread notes when it answers /-/ready.
    prom_ready: list[float] = []
    watcher = threading.Thread(
        target=_note_ready, args=(partial(prometheus.ready, pl), t0, 60, prom_ready), daemon=True
    )
    watcher.start()
    keda.start(pl)
    daemons.wait("KEDA (operator /readyz, APIService Available)", partial(keda.ready, pl), 120, logs=P.logs)
    keda_s = time.monotonic() - t0
    watcher.join()
    if not prom_ready:
        raise RuntimeError(f"prometheus not ready after 60s; see {P.logs}")
    prom_s = prom_ready[0]
    log(f"metrics ready: Prometheus {prom_s:.1f}s ({prometheus.address(pl)}), KEDA {keda_s:.1f}s")
    return Metrics(prometheus.address(pl), prom_s, keda_s, started=True)


def start_metrics(*, target: str | None = None, bin_dir: pathlib.Path | None = None) -> Metrics:
    """Prometheus and KEDA started on the running plane unless they run, and waited for; ``target``
    (HOST:PORT, the runtime stand-in's control address) set as Prometheus's scrape address."""
    bin_dir = bin_dir or build()
    with daemons.locked(P):
        return _start_metrics(bin_dir, target=target)


def stop_metrics(bin_dir: pathlib.Path | None = None) -> None:
    """KEDA unregistered and stopped, Prometheus stopped; the plane left running."""
    with daemons.locked(P):
        _stop_metrics(bin_dir or build())


def _stop_metrics(bin_dir: pathlib.Path) -> None:
    pl = plane(bin_dir)
    prom = threading.Thread(target=prometheus.stop, args=(pl,))  # beside KEDA's: each takes seconds
    prom.start()
    keda.stop(pl)
    prom.join()


def up(*, metrics: bool | None = None) -> None:
    """The plane (reused when it runs) and its fleet; with ``metrics`` (default ``INFERENCE_PLANE_METRICS``)
    Prometheus and KEDA too."""
    metrics = METRICS if metrics is None else metrics
    t0 = time.monotonic()
    bin_dir = build()
    with daemons.locked(P):
        if all(daemons.pid(P, c) for c in COMPONENTS) and api_ready():
            log("control plane already running")
        else:
            start(bin_dir)
        apply_fleet(bin_dir)
        if metrics:
            _start_metrics(bin_dir, target=None)
        elif keda.leftover(P):
            keda.unregister(keda.kubectl_of(plane(bin_dir)), P)
    log(
        f"ready in {time.monotonic() - t0:.1f}s: export KUBECONFIG={P.kubeconfig}; kubectl at {bin_dir / 'kubectl'}"
    )


def down() -> None:
    with daemons.locked(P):
        if any(daemons.pid(P, name) for name in METRICS_DAEMONS) or keda.leftover(P):
            _stop_metrics(build())
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
    for name in (*COMPONENTS, *METRICS_DAEMONS):
        pid = daemons.pid(P, name)
        print(f"{name:26s} {'running pid ' + str(pid) if pid else 'stopped'}")
    print(f"{'apiserver /readyz':26s} {'ok' if api_ready() else 'not ready'}")
    return 0 if all(daemons.pid(P, c) for c in COMPONENTS) else 1
