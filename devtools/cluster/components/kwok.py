"""kwok (``sigs.k8s.io/kwok``, built by build.sh): the simulated kubelets of the fleet's nodes.

It manages only the nodes annotated ``kwok.x-k8s.io/node=fake`` (devtools/cluster/fleet.py), with the
stages of devtools/cluster/components/kwok_stages.py taken from the pinned kwok module's source.
"""

from __future__ import annotations

import pathlib
from dataclasses import dataclass

from devtools.cluster.components.base import Daemon, Plane
from devtools.cluster.components.kwok_stages import write_stages_config
from devtools.cluster.config import pinned_version
from devtools.cluster.gomod import download_module

MODULE = "sigs.k8s.io/kwok"


def module_dir() -> pathlib.Path:
    """The pinned kwok module's source in the Go module cache, downloaded when missing."""
    return download_module(MODULE, pinned_version("KWOK_VERSION"))


@dataclass(frozen=True)
class Kwok(Daemon):
    def ports(self, plane: Plane) -> tuple[int, ...]:
        return (plane.kwok_port,)

    def argv(self, plane: Plane) -> list[str]:
        stages = write_stages_config(module_dir(), plane.paths.root / "kwok-stages.yaml")
        return [
            str(plane.bin_dir / self.name),
            f"--kubeconfig={plane.paths.component_kubeconfig(self.name)}",
            f"--config={stages}",
            "--manage-all-nodes=false",
            "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
            "--cidr=10.244.0.1/16",
            "--node-ip=10.0.0.1",
            f"--server-address=127.0.0.1:{plane.kwok_port}",
            *plane.tuning.kwok,
        ]


KWOK = Kwok("kwok", "KWOK_VERSION")
