"""etcd (``go.etcd.io/etcd/server/v3`` etcdmain, built by build.sh): the plane's store.

Client URL ``http://127.0.0.1:<etcd port>``, peer URL 10 ports above; ready when ``/health`` answers 200.
"""

from __future__ import annotations

import urllib.error
import urllib.request
from dataclasses import dataclass

from devtools.cluster.components.base import Daemon, Plane


@dataclass(frozen=True)
class Etcd(Daemon):
    def ports(self, plane: Plane) -> tuple[int, ...]:
        return (plane.etcd_port, plane.etcd_port + 10)

    def argv(self, plane: Plane) -> list[str]:
        client, peer = f"http://127.0.0.1:{plane.etcd_port}", f"http://127.0.0.1:{plane.etcd_port + 10}"
        return [
            str(plane.bin_dir / "etcd"),
            "--name", "local",
            "--data-dir", str(plane.paths.root / "etcd"),
            "--listen-client-urls", client,
            "--advertise-client-urls", client,
            "--listen-peer-urls", peer,
            "--initial-advertise-peer-urls", peer,
            "--initial-cluster", f"local={peer}",
            "--quota-backend-bytes", str(4 * 2**30),
            "--log-level", "warn",
            "--auto-compaction-retention", "5m",
        ]  # fmt: skip

    def ready(self, plane: Plane) -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{plane.etcd_port}/health", timeout=1) as r:
                return bool(r.status == 200)
        except (urllib.error.URLError, OSError):
            return False


ETCD = Etcd("etcd", "ETCD_VERSION", ready_timeout=30)
