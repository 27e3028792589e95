"""The plane of the scale benchmark: the local control plane with the ``scale`` tuning, a fleet of N
KWOK nodes, and the product deployed as ``make up`` deploys it (hack/demo/steps.py: CRDs, RBAC,
class, recipe, the webhook registered with the API server, the Hub mirror, the runtime stand-in),
except that the controller runs as its ServiceAccount (devtools/cluster/identity.py), never as admin.

Processes, logs and pids live in ``.cluster/bench-scale/``.
"""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field

import yaml

from devtools import procs
from devtools.cluster import config, fleet
from devtools.cluster.fleet_apply import ready_nodes
from devtools.product.controller import NAMESPACE, ControllerProcess
from hack.demo import steps
from hack.demo.state import Demo

ROOT = pathlib.Path(__file__).resolve().parents[2]
STATE = config.STATE / "bench-scale"
PROCESSES = ("hub-mirror", "issuer-standin", "runtime-standin", "webhook", "controller")


def say(msg: str) -> None:
    print(f"[scale {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


@dataclass
class Plane:
    """Handles of everything the benchmark started."""

    demo: Demo = field(default_factory=lambda: Demo(state=STATE))
    hub_url: str = ""
    runtime_address: str = ""
    controller: ControllerProcess | None = None
    workers: int = 4

    @property
    def bin_dir(self) -> pathlib.Path:
        return self.demo.bin_dir()

    @property
    def controller_pid(self) -> int:
        assert self.controller is not None and self.controller.background is not None
        return self.controller.background.pid

    def kubectl(self, *args: str, input: str | None = None) -> str:
        return self.demo.kubectl(*args, input=input)

    # ------------------------------------------------------------------ the control plane

    def cluster_up(self, *, fresh: bool) -> None:
        env = {**os.environ, "INFERENCE_PLANE_PROFILE": "scale"}
        stop_all(self.demo.state)
        if fresh:
            say("stopping the local control plane and dropping its etcd data (a fresh plane)")
            subprocess.run([sys.executable, "-m", "devtools.cluster", "down"], cwd=ROOT, env=env, check=True)
            shutil.rmtree(config.STATE / "etcd", ignore_errors=True)
        say("local control plane, profile scale (devtools/cluster/tuning.py)")
        subprocess.run([sys.executable, "-m", "devtools.cluster", "up"], cwd=ROOT, env=env, check=True)
        (self.demo.state / "bin-dir").unlink(missing_ok=True)

    def cluster_down(self) -> None:
        """Stop the plane and drop its etcd data: the next `make test` or `make up` in this
        checkout would otherwise start on the bench's thousand nodes and its webhook registration,
        which points at a port nothing listens on any more."""
        env = {**os.environ, "INFERENCE_PLANE_PROFILE": "scale"}
        subprocess.run([sys.executable, "-m", "devtools.cluster", "down"], cwd=ROOT, env=env, check=False)
        shutil.rmtree(config.STATE / "etcd", ignore_errors=True)

    def apply_fleet(self, nodes: int, volumes: int) -> None:
        """Nodes beyond the default fleet's, their slices, and a model volume per order."""
        default_nodes = sum(g.count for g in fleet.FLEET)
        objs = fleet.large_fleet(nodes - default_nodes) if nodes > default_nodes else []
        objs = [o for o in objs if o["kind"] != "DeviceClass"] + fleet.storage(volumes)[1:]
        say(f"fleet: {sum(o['kind'] == 'Node' for o in objs)} more nodes and their slices, {volumes} volumes")
        self.demo.state.mkdir(parents=True, exist_ok=True)
        path = self.demo.state / "fleet.yaml"
        path.write_text(yaml.safe_dump_all(objs, sort_keys=False))
        self.kubectl("apply", "--server-side", "--force-conflicts", "--field-manager=fleet", "-f", str(path))
        names = {o["metadata"]["name"] for o in objs if o["kind"] == "Node"}
        deadline = time.monotonic() + 600
        while True:
            ready = ready_nodes(self.kubectl("get", "nodes", "-o", "json"))
            if names <= ready:
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"{len(names - ready)} KWOK nodes not Ready after 600 s")
            time.sleep(2)

    # ------------------------------------------------------------------ the product

    def deploy(self, *, settings: dict[str, str]) -> None:
        self.demo.state.mkdir(parents=True, exist_ok=True)
        steps.install(self.demo)
        steps.make_pki(self.demo)
        self.hub_url = steps.start_hub(self.demo, tiny=False)
        # It reads an order and its token Secret once a minute, not every 2 s.
        # The issuer stand-in lists every Certificate in a pass: every 5 s at this scale.
        self.runtime_address, _ = steps.start_runtime(self.demo, cache_seconds=60, issuer_period=5.0)
        data = {
            **settings,
            "hfEndpoint": self.hub_url,
            "probeAddressOverride": self.runtime_address,
            "platformCAFile": str(self.demo.pki / "platform-ca.crt"),
        }
        patch = json.dumps({"data": data})
        self.kubectl("-n", NAMESPACE, "patch", "configmap", steps.SETTINGS, "--type=merge", "-p", patch)
        steps.start_webhook(self.demo)
        # The image runs compiled bytecode (pip compiles the wheel it installs); a source checkout
        # under PYTHONDONTWRITEBYTECODE would compile every module again at each restart.
        env = {k: v for k, v in self.demo.env.items() if k != "PYTHONDONTWRITEBYTECODE"}
        self.controller = ControllerProcess(
            kubeconfig=steps.controller_kubeconfig(self.demo),
            env={**env, "HF_ENDPOINT": self.hub_url},
            log_dir=self.demo.state,
            args=("--no-leader-elect", "--workers", str(self.workers)),
            log_each_start=False,
            ready_timeout=300,
            python=self.demo.python,
            cwd=ROOT,
        )
        self.start_controller()

    def start_controller(self) -> float:
        """Start the controller as its ServiceAccount; returns when its /readyz answers (seconds)."""
        assert self.controller is not None
        return self.controller.start()

    def metrics(self) -> str:
        assert self.controller is not None
        return self.controller.metrics(timeout=10)

    def kill_controller(self) -> None:
        """SIGKILL, as when a node dies: no graceful shutdown."""
        assert self.controller is not None
        self.controller.kill()

    def hub_requests(self) -> int:
        with urllib.request.urlopen(f"{self.hub_url}/_mirror/requests", timeout=10) as r:
            return len(json.loads(r.read())["requests"])


def stop_all(state: pathlib.Path) -> None:
    for name in reversed(PROCESSES):
        if procs.stop(name, state=state):
            say(f"stopped {name}")
