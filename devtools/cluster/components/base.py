"""The one shape of a component of the local plane: ``version``, ``build``, ``start``, ``ready``.

Two kinds, same four verbs:

- ``Daemon``: a process of the plane itself (etcd, kube-apiserver, kube-controller-manager,
  kube-scheduler, kwok), started by ``python -m devtools.cluster up`` in ``PLANE`` order from the
  binaries build.sh puts in the cache. A subclass gives its ``argv`` (and its ports and ``ready``);
  ``start`` and the process bookkeeping are shared (devtools/cluster/daemons.py).
- the metrics daemons (Prometheus, KEDA's three processes): plane daemons too (pids and logs in the
  plane's state, ports ``api_port`` +4..+10 below), built on demand and started only when asked
  (devtools/cluster/launcher.py ``start_metrics``); their modules give ``start(plane)``/``ready(plane)``.
- an add-on (cert-manager, LeaderWorkerSet): built on demand into
  ``<cache>/<name>-<version>/``, started onto a running plane by the demo or a test fixture with a
  ``Target`` (the plane's kubeconfig, a state directory, kubectl); ``start(target)`` returns a handle
  that ``ready(handle)`` checks. ``Addon`` is its Protocol; a module satisfies it.
"""

from __future__ import annotations

import pathlib
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, TypeVar

from devtools.cluster import daemons
from devtools.cluster.config import HERE, Paths, pinned_version
from devtools.cluster.tuning import Tuning

Kubectl = Callable[..., str]
"""``kubectl(*args, input=None, check=True) -> stdout``, raising on failure when ``check``."""


def run_kubectl(
    kubectl: pathlib.Path, kubeconfig: pathlib.Path, *args: str, input: str | None = None, check: bool = True
) -> str:
    """kubectl's stdout; RuntimeError with its stderr when it fails and ``check``."""
    res = subprocess.run(
        [str(kubectl), f"--kubeconfig={kubeconfig}", *args], input=input, text=True, capture_output=True
    )
    if check and res.returncode != 0:
        raise RuntimeError(f"kubectl {' '.join(args)}: {res.stderr.strip()}")
    return res.stdout


def build_plane_binaries() -> pathlib.Path:
    """Run build.sh (builds only what is missing, keyed by version) and return the bin directory."""
    res = subprocess.run(["bash", str(HERE / "build.sh")], check=True, stdout=subprocess.PIPE, text=True)
    return pathlib.Path(res.stdout.strip().splitlines()[-1])


@dataclass(frozen=True)
class Plane:
    """What a daemon's command line and readiness check read: one plane's state, ports and tuning."""

    paths: Paths
    bin_dir: pathlib.Path
    etcd_port: int
    api_port: int
    tuning: Tuning

    @property
    def kcm_port(self) -> int:
        return self.api_port + 1

    @property
    def scheduler_port(self) -> int:
        return self.api_port + 2

    @property
    def kwok_port(self) -> int:
        return self.api_port + 3

    # The metrics add-ons (devtools/cluster/components/prometheus.py and keda.py) take the ports above.
    @property
    def prometheus_port(self) -> int:
        return self.api_port + 4

    @property
    def keda_health_port(self) -> int:
        """The KEDA operator's /healthz and /readyz."""
        return self.api_port + 5

    @property
    def keda_grpc_port(self) -> int:
        """The KEDA operator's metrics service (gRPC over mutual TLS), which the adapter calls."""
        return self.api_port + 6

    @property
    def keda_adapter_port(self) -> int:
        """The external metrics API (HTTPS), on the aggregation address (devtools/cluster/netaddr.py)."""
        return self.api_port + 7

    @property
    def keda_adapter_metrics_port(self) -> int:
        """The adapter's own Prometheus metrics (its ``--port``)."""
        return self.api_port + 8

    @property
    def keda_webhooks_port(self) -> int:
        return self.api_port + 9

    @property
    def keda_webhooks_health_port(self) -> int:
        return self.api_port + 10

    @property
    def server_url(self) -> str:
        return f"https://127.0.0.1:{self.api_port}"


@dataclass(frozen=True)
class Daemon:
    """A process of the plane. ``ready_timeout`` 0: ``up`` goes on once the process runs."""

    name: str
    version_key: str
    ready_timeout: float = 0.0

    def version(self) -> str:
        return pinned_version(self.version_key)

    def build(self) -> pathlib.Path:
        """The binary, from the cache (build.sh builds the plane's binaries that are missing)."""
        return build_plane_binaries() / self.name

    def ports(self, plane: Plane) -> tuple[int, ...]:
        return ()

    def argv(self, plane: Plane) -> list[str]:
        raise NotImplementedError

    def start(self, plane: Plane) -> None:
        """Start the daemon unless it runs already (its flags unchanged when it does)."""
        daemons.start(plane.paths, self.name, self.argv(plane), ports=self.ports(plane))

    def ready(self, plane: Plane) -> bool:
        return daemons.pid(plane.paths, self.name) is not None


@dataclass(frozen=True)
class Target:
    """Where an add-on runs: the plane's kubeconfig, a state directory for its files, pids and logs,
    kubectl on the plane, and the field manager of what it applies."""

    kubeconfig: pathlib.Path
    state: pathlib.Path
    kubectl: Kubectl
    field_manager: str

    def apply(self, text: str) -> str:
        """Server-side apply of a YAML stream."""
        fm = f"--field-manager={self.field_manager}"
        return self.kubectl("apply", "--server-side", "--force-conflicts", fm, "-f", "-", input=text)


H = TypeVar("H")


class Addon(Protocol[H]):
    """An add-on module: ``version()``, ``build()``, ``start(target) -> handle``, ``ready(handle)``."""

    def version(self) -> str: ...

    def build(self) -> pathlib.Path: ...

    def start(self, target: Target) -> H: ...

    def ready(self, handle: H) -> bool: ...
