"""Start and stop the local control plane from the built binaries: no containers, no kwokctl.

State lives in ``.cluster/`` (git-ignored): pki/, etcd/, logs/, pids/, kubeconfigs. ``up`` is
idempotent: a healthy running plane is reused as it is, so a warm ``up`` takes about a second.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import pathlib
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass

import yaml

from devtools.cluster import fleet, pki
from devtools.cluster.tuning import tuning

REPO = pathlib.Path(__file__).resolve().parents[2]
HERE = pathlib.Path(__file__).resolve().parent
STATE = pathlib.Path(os.environ.get("INFERENCE_CLUSTER_DIR", REPO / ".cluster"))
COMPONENTS = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok")

ETCD_PORT = int(os.environ.get("INFERENCE_ETCD_PORT", "23790"))
API_PORT = int(os.environ.get("INFERENCE_API_PORT", "16443"))
KCM_PORT, SCHED_PORT, KWOK_PORT = API_PORT + 1, API_PORT + 2, API_PORT + 3
SERVICE_CIDR = "10.96.0.0/16"
# devtools/cluster/tuning.py: "scale" for a thousand KWOK nodes (bench.scale); "default" for the tests.
PROFILE = os.environ.get("INFERENCE_PLANE_PROFILE", "default")


def log(msg: str) -> None:
    print(f"[cluster] {msg}", file=sys.stderr, flush=True)


def versions() -> dict[str, str]:
    out = {}
    for line in (HERE / "versions.env").read_text().splitlines():
        if "=" in line and not line.startswith("#"):
            k, v = line.split("=", 1)
            out[k.strip()] = v.strip()
    return out


def build() -> pathlib.Path:
    """Run build.sh (builds only what is missing) and return the bin directory."""
    res = subprocess.run(["bash", str(HERE / "build.sh")], check=True, stdout=subprocess.PIPE, text=True)
    return pathlib.Path(res.stdout.strip().splitlines()[-1])


@dataclass(frozen=True)
class Paths:
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


def _kubeconfig(path: pathlib.Path, user: str) -> None:
    cfg = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "local",
                "cluster": {"server": server_url(), "certificate-authority": str(P.pki / "ca.crt")},
            }
        ],
        "users": [
            {
                "name": user,
                "user": {
                    "client-certificate": str(P.pki / f"{user}.crt"),
                    "client-key": str(P.pki / f"{user}.key"),
                },
            }
        ],
        "contexts": [{"name": "local", "context": {"cluster": "local", "user": user}}],
        "current-context": "local",
    }
    path.write_text(yaml.safe_dump(cfg))
    path.chmod(0o600)


def make_pki() -> None:
    P.pki.mkdir(parents=True, exist_ok=True)
    ca = pki.make_ca(P.pki, "ca", "inference-local-ca")
    pki.issue(
        P.pki,
        "apiserver",
        ca,
        cn="kube-apiserver",
        server=True,
        dns=(
            "localhost",
            "kubernetes",
            "kubernetes.default",
            "kubernetes.default.svc",
            "kubernetes.default.svc.cluster.local",
        ),
        ips=("127.0.0.1", "10.96.0.1"),
    )
    pki.issue(P.pki, "admin", ca, cn="kubernetes-admin", org="system:masters", client=True)
    pki.issue(P.pki, "kube-controller-manager", ca, cn="system:kube-controller-manager", client=True)
    pki.issue(P.pki, "kube-scheduler", ca, cn="system:kube-scheduler", client=True)
    pki.issue(P.pki, "kwok", ca, cn="kwok-controller", org="system:masters", client=True)
    pki.issue(P.pki, "apiserver-client", ca, cn="kube-apiserver-client", org="system:masters", client=True)
    pki.service_account_keys(P.pki)
    _kubeconfig(P.kubeconfig, "admin")
    for name in ("kube-controller-manager", "kube-scheduler", "kwok"):
        _kubeconfig(P.component_kubeconfig(name), name)


# The components are daemons that outlive the process that started them (the next test run
# reuses them). This process still holds a Popen for each one it started: kept here, it is
# neither garbage-collected while the child runs (a ResourceWarning, an error under pytest)
# nor left as a zombie that kill(pid, 0) would still report alive after ``down()``.
_SPAWNED: dict[str, subprocess.Popen[bytes]] = {}


def _pid(name: str) -> int | None:
    f = P.pids / name
    if not f.exists():
        return None
    child = _SPAWNED.get(name)
    if child is not None and child.poll() is not None:
        del _SPAWNED[name]
        return None
    try:
        pid = int(f.read_text())
        os.kill(pid, 0)
    except (ValueError, ProcessLookupError, PermissionError):
        return None
    return pid


def _port_in_use(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


# The ports each component listens on; a port someone else holds would make ``up`` wait on (or
# talk to) a process that is not ours, so it fails at once instead.
PORTS = {
    "etcd": (ETCD_PORT, ETCD_PORT + 10),
    "kube-apiserver": (API_PORT,),
    "kube-controller-manager": (KCM_PORT,),
    "kube-scheduler": (SCHED_PORT,),
    "kwok": (KWOK_PORT,),
}


def _start(name: str, argv: list[str]) -> None:
    if _pid(name) is not None:
        return
    taken = [port for port in PORTS[name] if _port_in_use(port)]
    if taken:
        raise RuntimeError(
            f"cannot start {name}: port {', '.join(map(str, taken))} on 127.0.0.1 is held by a process "
            f"this state dir ({STATE}) did not start; stop it, or set INFERENCE_API_PORT/INFERENCE_ETCD_PORT"
        )
    P.logs.mkdir(parents=True, exist_ok=True)
    P.pids.mkdir(parents=True, exist_ok=True)
    # The child holds its own copy of the log descriptor; the parent closes its copy at once.
    with (P.logs / f"{name}.log").open("ab") as out:
        proc = subprocess.Popen(
            argv,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            cwd=STATE,
        )
    _SPAWNED[name] = proc
    (P.pids / name).write_text(str(proc.pid))
    log(f"started {name} (pid {proc.pid}), log {P.logs / (name + '.log')}")


def _ssl() -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=str(P.pki / "ca.crt"))
    ctx.load_cert_chain(str(P.pki / "admin.crt"), str(P.pki / "admin.key"))
    return ctx


def api_ready(timeout: float = 2.0) -> bool:
    try:
        with urllib.request.urlopen(f"{server_url()}/readyz", context=_ssl(), timeout=timeout) as r:
            return bool(r.status == 200)
    except (urllib.error.URLError, OSError, ssl.SSLError):
        return False


def _wait(what: str, check: object, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if callable(check) and check():
            return
        time.sleep(0.2)
    raise RuntimeError(f"{what} not ready after {timeout:.0f}s; see {P.logs}")


def _etcd_ready() -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{ETCD_PORT}/health", timeout=1) as r:
            return bool(r.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def kwok_module_dir() -> pathlib.Path:
    """The pinned kwok module's source in the Go module cache, downloaded when missing.

    Run from an empty directory with GOFLAGS and GOWORK cleared, so neither a go.mod nearby nor a
    ``-mod=...`` in the environment changes what ``go mod download`` does."""
    version = versions()["KWOK_VERSION"]
    env = {**os.environ, "GOFLAGS": "", "GOWORK": "off", "GO111MODULE": "on"}
    with tempfile.TemporaryDirectory(prefix="kwok-mod-") as cwd:
        res = subprocess.run(
            ["go", "mod", "download", "-json", f"sigs.k8s.io/kwok@{version}"],
            cwd=cwd,
            env=env,
            stdout=subprocess.PIPE,
            text=True,
            check=False,
        )
    info = json.loads(res.stdout) if res.stdout.strip() else {}
    if res.returncode != 0 or not info.get("Dir"):
        raise RuntimeError(
            f"go mod download sigs.k8s.io/kwok@{version} failed: {info.get('Error', res.stdout)}"
        )
    return pathlib.Path(info["Dir"])


@contextlib.contextmanager
def _locked() -> Iterator[None]:
    """One ``up``/``down`` at a time on this state directory (parallel test sessions call ``up``)."""
    STATE.mkdir(parents=True, exist_ok=True)
    with (STATE / ".lock").open("w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


# Pods in this namespace stay Pending with their init containers running (and a pod IP) until
# they are annotated ``INIT_RELEASE_ANNOTATION=true``: a test can watch a "running" model fetcher.
# Released, they become Running and Ready as kwok's pod-ready stage would make them, keeping the IP
# (pod-ready would allocate a second one, which the API server refuses).
HOLD_INIT_NAMESPACE = "kwok-hold-init"
INIT_RELEASE_ANNOTATION = "test.inference.deckhouse.io/init-done"
_IN_HOLD: dict[str, object] = {
    "key": ".metadata.namespace",
    "operator": "In",
    "values": [HOLD_INIT_NAMESPACE],
}
_RELEASE = f'.metadata.annotations["{INIT_RELEASE_ANNOTATION}"]'
_LIVE_PENDING: list[dict[str, object]] = [
    {"key": ".metadata.deletionTimestamp", "operator": "DoesNotExist"},
    {"key": ".spec.nodeName", "operator": "Exists"},
    {"key": ".status.phase", "operator": "In", "values": ["Pending"]},
]
_HOLD_TEMPLATE = """{{ $now := Now }}
initContainerStatuses:
{{ range .spec.initContainers }}
- image: {{ .image | Quote }}
  name: {{ .name | Quote }}
  ready: false
  restartCount: 0
  started: true
  state:
    running:
      startedAt: {{ $now | Quote }}
{{ end }}
containerStatuses:
{{ range .spec.containers }}
- image: {{ .image | Quote }}
  name: {{ .name | Quote }}
  ready: false
  restartCount: 0
  started: false
  state:
    waiting:
      reason: PodInitializing
{{ end }}
{{ $podIPs := PodIPsWith .spec.nodeName ( or .spec.hostNetwork false ) ( or .metadata.uid "" ) ( or .metadata.name "" ) ( or .metadata.namespace "" ) }}
{{ with $podIPs }}
podIP: {{ index . 0 | Quote }}
podIPs:
{{ range . }}
- ip: {{ . | Quote }}
{{ end }}
{{ end }}
phase: Pending
"""
_RELEASE_TEMPLATE = """{{ $now := Now }}
conditions:
- lastTransitionTime: {{ $now | Quote }}
  status: "True"
  type: Initialized
- lastTransitionTime: {{ $now | Quote }}
  status: "True"
  type: Ready
- lastTransitionTime: {{ $now | Quote }}
  status: "True"
  type: ContainersReady
initContainerStatuses:
{{ range .spec.initContainers }}
- image: {{ .image | Quote }}
  name: {{ .name | Quote }}
  ready: true
  restartCount: 0
  started: false
  state:
    terminated:
      exitCode: 0
      finishedAt: {{ $now | Quote }}
      reason: Completed
      startedAt: {{ $now | Quote }}
{{ end }}
containerStatuses:
{{ range .spec.containers }}
- image: {{ .image | Quote }}
  name: {{ .name | Quote }}
  ready: true
  restartCount: 0
  started: true
  state:
    running:
      startedAt: {{ $now | Quote }}
{{ end }}
phase: Running
startTime: {{ $now | Quote }}
"""


def _stage(name: str, expressions: list[dict[str, object]], template: str) -> dict[str, object]:
    return {
        "apiVersion": "kwok.x-k8s.io/v1alpha1",
        "kind": "Stage",
        "metadata": {"name": name},
        "spec": {
            "resourceRef": {"apiGroup": "v1", "kind": "Pod"},
            "selector": {"matchExpressions": expressions},
            "next": {"statusTemplate": template},
        },
    }


def hold_init_stages() -> list[dict[str, object]]:
    """The stages of ``HOLD_INIT_NAMESPACE``'s pods: hold (once: until the pod has an IP), release."""
    hold: list[dict[str, object]] = [
        *_LIVE_PENDING,
        _IN_HOLD,
        {"key": _RELEASE, "operator": "NotIn", "values": ["true"]},
        {"key": ".status.podIP", "operator": "DoesNotExist"},
    ]
    release: list[dict[str, object]] = [
        *_LIVE_PENDING,
        _IN_HOLD,
        {"key": _RELEASE, "operator": "In", "values": ["true"]},
    ]
    return [
        _stage("pod-hold-init", hold, _HOLD_TEMPLATE),
        _stage("pod-release-init", release, _RELEASE_TEMPLATE),
    ]


def kwok_stages_config(path: pathlib.Path) -> pathlib.Path:
    """kwok's default 'fast' stages, taken from the pinned kwok module (node init and heartbeat,
    pod ready/complete/delete, init containers included) and written as one config file; plus
    ``hold_init_stages``, with pod-ready leaving ``HOLD_INIT_NAMESPACE`` to them."""
    stage = kwok_module_dir() / "kustomize" / "stage"
    files = [
        stage / "node/fast/node-initialize.yaml",
        stage / "node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
        stage / "pod/fast/pod-ready.yaml",
        stage / "pod/fast/pod-complete.yaml",
        stage / "pod/fast/pod-delete.yaml",
    ]
    docs = [yaml.safe_load(f.read_text()) for f in files]
    for doc in docs:
        if doc["metadata"]["name"] == "pod-ready":
            doc["spec"]["selector"]["matchExpressions"].append({**_IN_HOLD, "operator": "NotIn"})
    docs += hold_init_stages()
    path.write_text("---\n".join(yaml.dump(d, Dumper=_LiteralDumper, sort_keys=False) for d in docs))
    return path


class _LiteralDumper(yaml.SafeDumper):
    """Writes multi-line strings (the stages' templates) as literal blocks, readable in the file."""


def _str(dumper: yaml.SafeDumper, text: str) -> yaml.ScalarNode:
    style = "|" if "\n" in text else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", text, style=style)


_LiteralDumper.add_representer(str, _str)


def start(bin_dir: pathlib.Path) -> None:
    make_pki()
    pk = P.pki
    tuned = tuning(PROFILE)
    (STATE / "profile").write_text(tuned.profile)

    def b(n: str) -> str:
        return str(bin_dir / n)

    _start(
        "etcd",
        [
            b("etcd"),
            "--name",
            "local",
            "--data-dir",
            str(STATE / "etcd"),
            "--listen-client-urls",
            f"http://127.0.0.1:{ETCD_PORT}",
            "--advertise-client-urls",
            f"http://127.0.0.1:{ETCD_PORT}",
            "--listen-peer-urls",
            f"http://127.0.0.1:{ETCD_PORT + 10}",
            "--initial-advertise-peer-urls",
            f"http://127.0.0.1:{ETCD_PORT + 10}",
            "--initial-cluster",
            f"local=http://127.0.0.1:{ETCD_PORT + 10}",
            "--quota-backend-bytes",
            str(4 * 2**30),
            "--log-level",
            "warn",
            "--auto-compaction-retention",
            "5m",
        ],
    )
    _wait("etcd", _etcd_ready, 30)
    _start(
        "kube-apiserver",
        [
            b("kube-apiserver"),
            f"--etcd-servers=http://127.0.0.1:{ETCD_PORT}",
            "--bind-address=127.0.0.1",
            f"--secure-port={API_PORT}",
            "--advertise-address=127.0.0.1",
            f"--tls-cert-file={pk / 'apiserver.crt'}",
            f"--tls-private-key-file={pk / 'apiserver.key'}",
            f"--client-ca-file={pk / 'ca.crt'}",
            f"--kubelet-client-certificate={pk / 'apiserver-client.crt'}",
            f"--kubelet-client-key={pk / 'apiserver-client.key'}",
            f"--service-account-key-file={pk / 'sa.pub'}",
            f"--service-account-signing-key-file={pk / 'sa.key'}",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            f"--service-cluster-ip-range={SERVICE_CIDR}",
            "--authorization-mode=Node,RBAC",
            "--allow-privileged=true",
            "--enable-admission-plugins=NodeRestriction",
            "--endpoint-reconciler-type=none",
            "--profiling=false",
            "--v=1",
        ],
    )
    _wait("kube-apiserver", api_ready, 90)
    _start(
        "kube-controller-manager",
        [
            b("kube-controller-manager"),
            f"--kubeconfig={P.component_kubeconfig('kube-controller-manager')}",
            f"--authentication-kubeconfig={P.component_kubeconfig('kube-controller-manager')}",
            f"--authorization-kubeconfig={P.component_kubeconfig('kube-controller-manager')}",
            "--bind-address=127.0.0.1",
            f"--secure-port={KCM_PORT}",
            "--leader-elect=false",
            "--use-service-account-credentials=true",
            f"--service-account-private-key-file={pk / 'sa.key'}",
            f"--root-ca-file={pk / 'ca.crt'}",
            f"--cluster-signing-cert-file={pk / 'ca.crt'}",
            f"--cluster-signing-key-file={pk / 'ca.key'}",
            f"--service-cluster-ip-range={SERVICE_CIDR}",
            "--controllers=*,-nodeipam",
            *tuned.controller_manager,
            "--v=1",
        ],
    )
    _start(
        "kube-scheduler",
        [
            b("kube-scheduler"),
            f"--kubeconfig={P.component_kubeconfig('kube-scheduler')}",
            f"--authentication-kubeconfig={P.component_kubeconfig('kube-scheduler')}",
            f"--authorization-kubeconfig={P.component_kubeconfig('kube-scheduler')}",
            "--bind-address=127.0.0.1",
            f"--secure-port={SCHED_PORT}",
            "--leader-elect=false",
            *tuned.scheduler,
            "--v=1",
        ],
    )
    _start(
        "kwok",
        [
            b("kwok"),
            f"--kubeconfig={P.component_kubeconfig('kwok')}",
            f"--config={kwok_stages_config(STATE / 'kwok-stages.yaml')}",
            "--manage-all-nodes=false",
            "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
            "--cidr=10.244.0.1/16",
            "--node-ip=10.0.0.1",
            f"--server-address=127.0.0.1:{KWOK_PORT}",
            *tuned.kwok,
        ],
    )


def kubectl(bin_dir: pathlib.Path, *args: str, input: str | None = None) -> str:
    res = subprocess.run(
        [str(bin_dir / "kubectl"), f"--kubeconfig={P.kubeconfig}", *args],
        input=input,
        text=True,
        capture_output=True,
    )
    if res.returncode != 0:
        raise RuntimeError(f"kubectl {' '.join(args)}: {res.stderr.strip()}")
    return res.stdout


def apply_fleet(bin_dir: pathlib.Path) -> None:
    objs = fleet.default_fleet() + fleet.storage()
    path = STATE / "fleet.yaml"
    path.write_text(yaml.safe_dump_all(objs, sort_keys=False))
    # Wait for the default service account machinery and RBAC bootstrap before applying.
    _wait("default namespace", lambda: "default" in kubectl(bin_dir, "get", "ns", "-o", "name"), 60)
    kubectl(bin_dir, "apply", "--server-side", "--force-conflicts", "--field-manager=fleet", "-f", str(path))
    # Released model volumes (their orders were deleted) become available again.
    pvs = json.loads(kubectl(bin_dir, "get", "pv", "-l", "inference.local/pool=models", "-o", "json"))
    for pv in pvs["items"]:
        if pv.get("status", {}).get("phase") == "Released":
            kubectl(
                bin_dir,
                "patch",
                "pv",
                pv["metadata"]["name"],
                "--type=json",
                "-p",
                '[{"op":"remove","path":"/spec/claimRef"}]',
            )
    node_names = [o["metadata"]["name"] for o in objs if o["kind"] == "Node"]

    def nodes_ready() -> bool:
        out = json.loads(kubectl(bin_dir, "get", "nodes", "-o", "json"))
        ready = {
            n["metadata"]["name"]
            for n in out["items"]
            if any(
                c["type"] == "Ready" and c["status"] == "True"
                for c in n.get("status", {}).get("conditions", [])
            )
        }
        return all(n in ready for n in node_names)

    _wait("KWOK nodes", nodes_ready, 60)


def up() -> None:
    t0 = time.monotonic()
    bin_dir = build()
    with _locked():
        if all(_pid(c) for c in COMPONENTS) and api_ready():
            log("control plane already running")
        else:
            start(bin_dir)
        apply_fleet(bin_dir)
    log(
        f"ready in {time.monotonic() - t0:.1f}s: export KUBECONFIG={P.kubeconfig}; kubectl at {bin_dir / 'kubectl'}"
    )


def down() -> None:
    with _locked():
        _stop_all()


def _stop_all() -> None:
    for name in reversed(COMPONENTS):
        _stop(name)


def _stop(name: str) -> None:
    pid = _pid(name)
    if pid is None:
        (P.pids / name).unlink(missing_ok=True)
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGTERM)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and _pid(name) is not None:
        time.sleep(0.1)
    if _pid(name) is not None:
        os.killpg(pid, signal.SIGKILL)
    child = _SPAWNED.pop(name, None)
    if child is not None:
        child.wait(timeout=15)
    (P.pids / name).unlink(missing_ok=True)
    log(f"stopped {name}")


def stop_component(name: str) -> None:
    """Stop one component of a running plane (SIGTERM to its process group), leaving the others."""
    if name not in COMPONENTS:
        raise ValueError(f"unknown component {name!r}; one of {', '.join(COMPONENTS)}")
    with _locked():
        _stop(name)


def restart_component(name: str, *, down_seconds: float = 0.0, bin_dir: pathlib.Path | None = None) -> None:
    """Restart one component of a running plane: stop it, wait ``down_seconds``, start what is
    stopped again with the same flags (``start`` skips the running ones) and wait until it serves.
    For fault injection (bench/chaos): etcd and kube-apiserver keep their data and certificates."""
    stop_component(name)
    time.sleep(down_seconds)
    bin_dir = bin_dir or build()
    with _locked():
        start(bin_dir)


def status() -> int:
    for name in COMPONENTS:
        print(f"{name:26s} {'running pid ' + str(_pid(name)) if _pid(name) else 'stopped'}")
    print(f"{'apiserver /readyz':26s} {'ok' if api_ready() else 'not ready'}")
    return 0 if all(_pid(c) for c in COMPONENTS) else 1
