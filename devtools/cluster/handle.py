"""A handle on the running local plane, as the integration tests, the bench and the platform see it:
its kubeconfig, server, binaries and CA (``Cluster``), and kubectl on it (``Kubectl``)."""

from __future__ import annotations

import pathlib
import subprocess
from dataclasses import dataclass

from devtools.cluster import launcher
from devtools.cluster.config import P, server_url


@dataclass(frozen=True)
class Cluster:
    kubeconfig: pathlib.Path
    server: str
    bin_dir: pathlib.Path
    ca_file: pathlib.Path

    @property
    def kubectl_path(self) -> pathlib.Path:
        return self.bin_dir / "kubectl"


def running_cluster() -> Cluster:
    """The local plane, started (``python -m devtools.cluster up``) unless it runs, and its handle."""
    launcher.up()
    return Cluster(
        kubeconfig=P.kubeconfig, server=server_url(), bin_dir=launcher.build(), ca_file=P.pki / "ca.crt"
    )


class Kubectl:
    """Our built kubectl with the admin kubeconfig; a failure raises AssertionError when ``check``."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster

    def __call__(
        self, *args: str, input: str | None = None, check: bool = True, timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        res = subprocess.run(
            [str(self.cluster.kubectl_path), f"--kubeconfig={self.cluster.kubeconfig}", *args],
            input=input,
            text=True,
            capture_output=True,
            timeout=timeout,
        )
        if check and res.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed ({res.returncode}): {res.stderr.strip()}")
        return res

    def out(self, *args: str, input: str | None = None, check: bool = True) -> str:
        """Its stdout only: the ``Kubectl`` shape devtools.cluster.components take."""
        return self(*args, input=input, check=check).stdout
