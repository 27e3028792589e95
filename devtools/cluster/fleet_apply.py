"""The simulated fleet (devtools/cluster/fleet.py) applied to a running plane: its nodes Ready under kwok,
its model volumes available again once their orders are gone."""

from __future__ import annotations

import json
import pathlib

import yaml

from devtools.cluster import daemons, fleet
from devtools.cluster.components.base import run_kubectl
from devtools.cluster.config import Paths


def ready_nodes(nodes_json: str) -> set[str]:
    """The names of the nodes of a ``kubectl get nodes -o json`` whose Ready condition is True."""
    out: set[str] = set()
    for n in json.loads(nodes_json)["items"]:
        for c in n.get("status", {}).get("conditions") or []:
            if c["type"] == "Ready" and c["status"] == "True":
                out.add(n["metadata"]["name"])
    return out


def apply_fleet(bin_dir: pathlib.Path, paths: Paths) -> None:
    def kubectl(*args: str) -> str:
        return run_kubectl(bin_dir / "kubectl", paths.kubeconfig, *args)

    objs = fleet.default_fleet() + fleet.storage()
    path = paths.root / "fleet.yaml"
    path.write_text(yaml.safe_dump_all(objs, sort_keys=False))
    # Wait for the default service account machinery and RBAC bootstrap before applying.
    daemons.wait(
        "default namespace", lambda: "default" in kubectl("get", "ns", "-o", "name"), 60, logs=paths.logs
    )
    kubectl("apply", "--server-side", "--force-conflicts", "--field-manager=fleet", "-f", str(path))
    # Released model volumes (their orders were deleted) become available again.
    pvs = json.loads(kubectl("get", "pv", "-l", "inference.local/pool=models", "-o", "json"))
    for pv in pvs["items"]:
        if pv.get("status", {}).get("phase") == "Released":
            patch = '[{"op":"remove","path":"/spec/claimRef"}]'
            kubectl("patch", "pv", pv["metadata"]["name"], "--type=json", "-p", patch)
    node_names = {o["metadata"]["name"] for o in objs if o["kind"] == "Node"}

    def nodes_ready() -> bool:
        return node_names <= ready_nodes(kubectl("get", "nodes", "-o", "json"))

    daemons.wait("KWOK nodes", nodes_ready, 60, logs=paths.logs)
