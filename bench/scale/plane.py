"""The plane of the scale benchmark: the local control plane with the ``scale`` tuning, a fleet of N
KWOK nodes, and the product deployed as ``make up`` deploys it (hack/demo.py's steps: CRDs, RBAC,
class, recipe, the webhook registered with the API server, the Hub mirror, the runtime stand-in),
except that the controller runs as its ServiceAccount (devtools/cluster/identity.py), never as admin.

Processes, logs and pids live in ``.cluster/bench-scale/``.
"""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field

import yaml

from devtools.cluster import fleet, launcher
from devtools.cluster.identity import service_account_kubeconfig
from hack import demo as d
from hack import procs

ROOT = pathlib.Path(__file__).resolve().parents[2]
STATE = launcher.STATE / "bench-scale"
NAMESPACE = d.NAMESPACE
PROCESSES = ("hub-mirror", "issuer-standin", "runtime-standin", "webhook", "controller")


def say(msg: str) -> None:
    print(f"[scale {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


@dataclass
class Plane:
    """Handles of everything the benchmark started."""

    demo: d.Demo = field(default_factory=lambda: d.Demo(state=STATE))
    hub_url: str = ""
    runtime_address: str = ""
    controller_pid: int = 0
    metrics_port: int = 0
    health_port: int = 0
    controller_starts: int = 0
    controller_env: dict[str, str] = field(default_factory=dict)
    workers: int = 4

    @property
    def bin_dir(self) -> pathlib.Path:
        return self.demo._bin_dir()

    def kubectl(self, *args: str, input: str | None = None) -> str:
        return self.demo.kubectl(*args, input=input)

    # ------------------------------------------------------------------ the control plane

    def cluster_up(self, *, fresh: bool) -> None:
        env = {**os.environ, "INFERENCE_PLANE_PROFILE": "scale"}
        stop_all(self.demo.state)
        if fresh:
            say("stopping the local control plane and dropping its etcd data (a fresh plane)")
            subprocess.run([sys.executable, "-m", "devtools.cluster", "down"], cwd=ROOT, env=env, check=True)
            shutil.rmtree(launcher.STATE / "etcd", ignore_errors=True)
        say("local control plane, profile scale (devtools/cluster/tuning.py)")
        subprocess.run([sys.executable, "-m", "devtools.cluster", "up"], cwd=ROOT, env=env, check=True)
        (self.demo.state / "bin-dir").unlink(missing_ok=True)

    def cluster_down(self) -> None:
        """Stop the plane and drop its etcd data: the next `make test` or `make up` in this
        checkout would otherwise start on the bench's thousand nodes and its webhook registration,
        which points at a port nothing listens on any more."""
        env = {**os.environ, "INFERENCE_PLANE_PROFILE": "scale"}
        subprocess.run([sys.executable, "-m", "devtools.cluster", "down"], cwd=ROOT, env=env, check=False)
        shutil.rmtree(launcher.STATE / "etcd", ignore_errors=True)

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
        d.install(self.demo)
        d.make_pki(self.demo)
        self.hub_url = d.start_hub(self.demo)
        self.runtime_address = self._start_runtime()
        data = {
            **settings,
            "hfEndpoint": self.hub_url,
            "probeAddressOverride": self.runtime_address,
            "platformCAFile": str(self.demo.pki / "platform-ca.crt"),
        }
        self.kubectl(
            "-n",
            NAMESPACE,
            "patch",
            "configmap",
            d.SETTINGS,
            "--type=merge",
            "-p",
            json.dumps({"data": data}),
        )
        d.start_webhook(self.demo)
        # The image runs compiled bytecode (pip compiles the wheel it installs); a source checkout
        # under PYTHONDONTWRITEBYTECODE would compile every module again at each restart.
        env = {k: v for k, v in self.demo.env.items() if k != "PYTHONDONTWRITEBYTECODE"}
        self.controller_env = {**env, "HF_ENDPOINT": self.hub_url}
        self.start_controller()

    def _start_runtime(self) -> str:
        """The runtime stand-in; it reads an order and its token Secret once a minute, not every 2 s."""
        bg = procs.start(
            "runtime-standin",
            [
                self.demo.python,
                "-m",
                "standins.runtime",
                "--host",
                "127.0.0.1",
                "--port",
                "0",
                "--kubeconfig",
                str(self.demo.kubeconfig),
                "--cache-seconds",
                "60",
            ],
            state=self.demo.state,
            cwd=ROOT,
            env=self.demo.env,
        )
        match = procs.wait_for_line(bg, d.RUNTIME_LINE, timeout=60)
        # It serves only the certificates the issuer stand-in writes; a pass lists every Certificate.
        d.start_issuer(self.demo, period=5.0)
        return f"{match.group(1)}:{match.group(2)}"

    def start_controller(self) -> float:
        """Start the controller as its ServiceAccount; returns when its /readyz answers (seconds)."""
        kubeconfig = service_account_kubeconfig(
            kubectl=self.bin_dir / "kubectl",
            admin_kubeconfig=self.demo.kubeconfig,
            namespace=NAMESPACE,
            name="inference-controller",
            out=self.demo.state / "controller.kubeconfig",
        )
        self.metrics_port, self.health_port = procs.free_port(), procs.free_port()
        self.controller_starts += 1
        t0 = time.monotonic()
        bg = procs.start(
            "controller",
            [
                self.demo.python,
                "-m",
                "controller",
                "--kubeconfig",
                str(kubeconfig),
                "--namespace",
                NAMESPACE,
                "--settings-configmap",
                d.SETTINGS,
                "--no-leader-elect",
                "--workers",
                str(self.workers),
                "--metrics-port",
                str(self.metrics_port),
                "--health-port",
                str(self.health_port),
                "--bind-address",
                "127.0.0.1",
            ],
            state=self.demo.state,
            cwd=ROOT,
            env=self.controller_env,
        )
        self.controller_pid = bg.pid
        while not self.controller_ready():
            if not procs.alive(bg.pid):
                raise procs.ProcessError(f"the controller exited; see {bg.log}")
            if time.monotonic() - t0 > 300:
                raise procs.ProcessError(f"the controller is not ready after 300 s; see {bg.log}")
            time.sleep(0.1)
        return time.monotonic() - t0

    def controller_ready(self) -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.health_port}/readyz", timeout=2) as r:
                return bool(r.status == 200)
        except OSError:
            return False

    def metrics(self) -> str:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=10) as r:
            return str(r.read().decode())

    def kill_controller(self) -> None:
        """SIGKILL, as when a node dies: no graceful shutdown."""
        os.kill(self.controller_pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while procs.alive(self.controller_pid) and time.monotonic() < deadline:
            time.sleep(0.05)

    def hub_requests(self) -> int:
        with urllib.request.urlopen(f"{self.hub_url}/_mirror/requests", timeout=10) as r:
            return len(json.loads(r.read())["requests"])


def ready_nodes(nodes_json: str) -> set[str]:
    out = set()
    for n in json.loads(nodes_json)["items"]:
        for c in n.get("status", {}).get("conditions") or []:
            if c["type"] == "Ready" and c["status"] == "True":
                out.add(n["metadata"]["name"])
    return out


def stop_all(state: pathlib.Path) -> None:
    for name in reversed(PROCESSES):
        if procs.stop(name, state=state):
            say(f"stopped {name}")
