"""``make demo`` / ``make up`` / ``make down``: the whole product on one machine.

    python -m hack.demo demo   # up, then the guide's order (examples/support-llm.yaml) to Ready, and a curl
    python -m hack.demo up     # control plane, CRDs, RBAC, class, recipe, webhook, controller, stand-ins
    python -m hack.demo down   # stop what up started, then the local control plane [--keep-cluster]
    python -m hack.demo status

The webhook, the controller, the Hugging Face mirror and the runtime stand-in run as local background
processes with their logs and pids under ``.demo/`` (``INFERENCE_DEMO_DIR``). The local control plane
is ``python -m devtools.cluster`` (state in ``.cluster/``). With ``HF_ENDPOINT`` set, the controller uses
that Hub endpoint and no mirror is started.

The pure helpers (progress lines, the local webhook configurations, the curl command) are tested in
tests/unit/test_demo.py; the steps are plain functions over ``Demo``, which holds every path.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import pathlib
import shlex
import ssl
import subprocess
import sys
import time
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import yaml

from devtools.cluster import launcher, pki
from devtools.cluster.identity import service_account_kubeconfig
from hack import lws, procs
from hack.cert_manager import crds_dir
from hack.established import wait_established
from shared import reasons
from standins import local_webhook

ROOT = pathlib.Path(__file__).resolve().parent.parent
NAMESPACE = "d8-inference"
SETTINGS = "inference-settings"
EXAMPLE = ROOT / "examples" / "support-llm.yaml"
LOCAL_OVERLAY = ROOT / "deploy" / "overlays" / "local"
OUR_CRDS = ("inferenceservices", "inferenceserviceclasses", "inferencerecipes")
# Local process names, in start order; `down` stops them in reverse.
PROCESSES = ("hub-mirror", "issuer-standin", "runtime-standin", "webhook", "lws-controller", "controller")
CONTROLLER_METRICS_PORT = 18080
CONTROLLER_HEALTH_PORT = 18081
HUB_MIRROR_LINE = r"HF mirror listening on (http://\S+)"
RUNTIME_LINE = r"runtime stand-in listening on https://([0-9.]+):(\d+)"
ISSUER_LINE = r"issuer stand-in running"


def say(msg: str) -> None:
    print(f"==> {msg}", flush=True)


# ---------------------------------------------------------------- pure helpers


def chain_summary(obj: Mapping[str, Any]) -> str:
    """``Pending: Planned=False NoCapacity`` — the phase and the first condition of the chain not True."""
    status = obj.get("status") or {}
    phase = status.get("phase") or "(no status yet)"
    conditions = {c.get("type"): c for c in status.get("conditions") or []}
    for kind in reasons.CHAIN:
        cond = conditions.get(kind)
        if cond is None:
            return f"{phase}: {kind} not reported yet"
        if cond.get("status") != "True":
            text = f"{phase}: {kind}={cond.get('status')} {cond.get('reason', '')}".rstrip()
            message = cond.get("message")
            return f"{text} - {message}" if message else text
    return f"{phase}: {reasons.READY}=True {conditions[reasons.READY].get('reason', '')}".rstrip()


def outcome(obj: Mapping[str, Any]) -> str | None:
    """``ready`` / ``failed`` when the order reached an end the demo can report; None while waiting."""
    status = obj.get("status") or {}
    if status.get("observedGeneration") != (obj.get("metadata") or {}).get("generation"):
        return None
    phase = status.get("phase")
    if phase in ("Ready", "Degraded"):
        return "ready"
    if phase == "Failed":
        return "failed"
    return None


def curl_command(url: str, *, token: str | None, ca_file: pathlib.Path, address: str) -> list[str]:
    """A curl of ``<url>/v1/models`` that reaches the runtime stand-in at ``address`` (host:port).

    ``--connect-to`` keeps the endpoint's name in the URL, the SNI and the certificate check, and only
    changes where the TCP connection goes (``--resolve`` cannot change the port).
    """
    parts = urlsplit(url)
    host, port = parts.hostname or "", parts.port or 443
    cmd = ["curl", "-sS", "--cacert", str(ca_file), "--connect-to", f"{host}:{port}:{address}"]
    if token is not None:
        cmd += ["-H", f"Authorization: Bearer {token}"]
    return [*cmd, url.rstrip("/") + "/v1/models"]


def shown(cmd: Sequence[str], token: str | None) -> str:
    """The command as a person would type it, with the token as "$TOKEN"."""
    words = [shlex.quote(w) for w in cmd]
    text = " ".join(words)
    if token:
        text = text.replace(shlex.quote(f"Authorization: Bearer {token}"), '"Authorization: Bearer $TOKEN"')
    return text


# ---------------------------------------------------------------- the demo


@dataclass
class Demo:
    """Every path and handle of one demo installation."""

    root: pathlib.Path = ROOT
    state: pathlib.Path = field(
        default_factory=lambda: pathlib.Path(os.environ.get("INFERENCE_DEMO_DIR", ROOT / ".demo"))
    )
    python: str = sys.executable
    env: dict[str, str] = field(default_factory=lambda: dict(os.environ))

    @property
    def pki(self) -> pathlib.Path:
        return self.state / "pki"

    @property
    def kubeconfig(self) -> pathlib.Path:
        return launcher.P.kubeconfig

    def kubectl(self, *args: str, input: str | None = None, check: bool = True) -> str:
        bin_dir = self._bin_dir()
        res = subprocess.run(
            [str(bin_dir / "kubectl"), f"--kubeconfig={self.kubeconfig}", *args],
            input=input,
            text=True,
            capture_output=True,
            check=False,
        )
        if check and res.returncode != 0:
            raise RuntimeError(f"kubectl {' '.join(args)}: {res.stderr.strip()}")
        return res.stdout

    def _bin_dir(self) -> pathlib.Path:
        cached = self.state / "bin-dir"
        if cached.exists():
            return pathlib.Path(cached.read_text().strip())
        bin_dir = launcher.build()
        self.state.mkdir(parents=True, exist_ok=True)
        cached.write_text(str(bin_dir))
        return bin_dir

    def write(self, name: str, value: object) -> None:
        path = self.state / "state.json"
        data = json.loads(path.read_text()) if path.exists() else {}
        data[name] = value
        path.write_text(json.dumps(data, indent=2))

    def read(self, name: str) -> Any:
        path = self.state / "state.json"
        return (json.loads(path.read_text()) if path.exists() else {}).get(name)


def cluster_up(demo: Demo) -> None:
    say("local control plane: python -m devtools.cluster up (a first run builds it from the module proxy)")
    subprocess.run([demo.python, "-m", "devtools.cluster", "up"], cwd=demo.root, env=demo.env, check=True)
    (demo.state / "bin-dir").unlink(missing_ok=True)


def install(demo: Demo) -> None:
    say("cert-manager CRDs (from its Go module), our CRDs, RBAC, the default-llm class, the vllm recipe")
    demo.kubectl("apply", "--server-side", "--force-conflicts", "--field-manager=demo", "-f", str(crds_dir()))
    demo.kubectl(
        "apply",
        "--server-side",
        "--force-conflicts",
        "--field-manager=demo",
        "-k",
        str(demo.root / "deploy" / "crds"),
    )
    names = [f"crd/{n}.ai.deckhouse.io" for n in OUR_CRDS] + ["crd/certificates.cert-manager.io"]
    if not wait_established(demo.kubectl, names, timeout=120):
        raise RuntimeError(f"CRDs not Established after 120 s: {', '.join(names)}")
    demo.kubectl(
        "apply", "--server-side", "--force-conflicts", "--field-manager=demo", "-k", str(LOCAL_OVERLAY)
    )


def make_pki(demo: Demo) -> None:
    demo.pki.mkdir(parents=True, exist_ok=True)
    pki.make_ca(demo.pki, "platform-ca", "inference platform CA (local demo)")
    webhook_ca = pki.make_ca(demo.pki, "webhook-ca", "inference webhook CA (local demo)")
    pki.issue(
        demo.pki,
        "webhook",
        webhook_ca,
        cn="inference-webhook (local)",
        dns=("localhost",),
        ips=("127.0.0.1",),
        server=True,
    )


def start_hub(demo: Demo) -> str:
    if demo.env.get("HF_ENDPOINT"):
        say(f"Hugging Face endpoint from HF_ENDPOINT: {demo.env['HF_ENDPOINT']} (no mirror started)")
        return demo.env["HF_ENDPOINT"].rstrip("/")
    say("Hugging Face mirror stand-in (python -m standins.hub_mirror)")
    bg = procs.start(
        "hub-mirror",
        [demo.python, "-m", "standins.hub_mirror", "--host", "127.0.0.1", "--port", "0"],
        state=demo.state,
        cwd=demo.root,
        env=demo.env,
    )
    return procs.wait_for_line(bg, HUB_MIRROR_LINE, timeout=60).group(1)


def start_runtime(demo: Demo) -> str:
    say("runtime stand-in (python -m standins.runtime): answers for every order; real runtimes need GPUs")
    bg = procs.start(
        "runtime-standin",
        [
            demo.python,
            "-m",
            "standins.runtime",
            "--host",
            "127.0.0.1",
            "--port",
            "0",
            "--kubeconfig",
            str(demo.kubeconfig),
        ],
        state=demo.state,
        cwd=demo.root,
        env=demo.env,
    )
    match = procs.wait_for_line(bg, RUNTIME_LINE, timeout=60)
    start_issuer(demo)
    return f"{match.group(1)}:{match.group(2)}"


def start_issuer(demo: Demo, *, period: float = 1.0) -> None:
    """cert-manager's CA issuer does not run here: the issuer stand-in writes each order's
    ``<order>-tls`` from its Certificate, the only certificate the runtime stand-in serves."""
    say("issuer stand-in (python -m standins.issuer): issues the orders' Certificates from the platform CA")
    pki = [f"--ca-{k}={demo.pki / f'platform-ca.{e}'}" for k, e in (("cert", "crt"), ("key", "key"))]
    bg = procs.start(
        "issuer-standin",
        [
            demo.python,
            "-m",
            "standins.issuer",
            *pki,
            f"--period={period}",
            "--kubeconfig",
            str(demo.kubeconfig),
        ],
        state=demo.state,
        cwd=demo.root,
        env=demo.env,
    )
    procs.wait_for_line(bg, ISSUER_LINE, timeout=60)


def start_webhook(demo: Demo) -> None:
    port = procs.free_port()
    say(f"admission webhook (python -m webhook) on https://127.0.0.1:{port}, registered with the API server")
    bg = procs.start(
        "webhook",
        [
            demo.python,
            "-m",
            "webhook",
            "--cert-file",
            str(demo.pki / "webhook.crt"),
            "--key-file",
            str(demo.pki / "webhook.key"),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
        ],
        state=demo.state,
        cwd=demo.root,
        env=demo.env,
    )
    wait_https(bg, port, ca_file=demo.pki / "webhook-ca.crt")
    confs = local_webhook.configurations(
        base_url=f"https://127.0.0.1:{port}", ca_bundle=(demo.pki / "webhook-ca.crt").read_bytes()
    )
    demo.kubectl(
        "apply",
        "--server-side",
        "--force-conflicts",
        "--field-manager=demo",
        "-f",
        "-",
        input=yaml.safe_dump_all(confs),
    )
    demo.write("webhookConfigurations", [[c["kind"], c["metadata"]["name"]] for c in confs])


def wait_https(bg: procs.Background, port: int, *, ca_file: pathlib.Path, timeout: float = 60) -> None:
    ctx = ssl.create_default_context(cafile=str(ca_file))
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(f"https://127.0.0.1:{port}/readyz", context=ctx, timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        if not procs.alive(bg.pid):
            raise procs.ProcessError(
                f"{bg.name} exited; last lines of {bg.log}:\n{procs.tail(bg.log.read_text())}"
            )
        if time.monotonic() > deadline:
            raise procs.ProcessError(
                f"{bg.name} is not ready on port {port} after {timeout:.0f}s; see {bg.log}"
            )
        time.sleep(0.3)


def configure(demo: Demo, *, runtime_address: str) -> None:
    """The settings only this machine knows: where the probe connects and which CA it trusts."""
    patch = {
        "data": {"probeAddressOverride": runtime_address, "platformCAFile": str(demo.pki / "platform-ca.crt")}
    }
    demo.kubectl("-n", NAMESPACE, "patch", "configmap", SETTINGS, "--type=merge", "-p", json.dumps(patch))


def start_controller(demo: Demo, *, hf_endpoint: str) -> None:
    say(
        f"controller (python -m controller) as ServiceAccount {NAMESPACE}/inference-controller, Hub {hf_endpoint}"
    )
    kubeconfig = service_account_kubeconfig(
        kubectl=demo._bin_dir() / "kubectl",
        admin_kubeconfig=demo.kubeconfig,
        namespace=NAMESPACE,
        name="inference-controller",
        out=demo.state / "controller.kubeconfig",
    )
    bg = procs.start(
        "controller",
        [
            demo.python,
            "-m",
            "controller",
            "--kubeconfig",
            str(kubeconfig),
            "--namespace",
            NAMESPACE,
            "--settings-configmap",
            SETTINGS,
            "--no-leader-elect",
            "--metrics-port",
            str(CONTROLLER_METRICS_PORT),
            "--health-port",
            str(CONTROLLER_HEALTH_PORT),
            "--bind-address",
            "127.0.0.1",
        ],
        state=demo.state,
        cwd=demo.root,
        env={**demo.env, "HF_ENDPOINT": hf_endpoint},
    )
    deadline = time.monotonic() + 120
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{CONTROLLER_HEALTH_PORT}/readyz", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        if not procs.alive(bg.pid):
            raise procs.ProcessError(
                f"the controller exited; last lines of {bg.log}:\n{procs.tail(bg.log.read_text())}"
            )
        if time.monotonic() > deadline:
            raise procs.ProcessError(f"the controller is not ready after 120s; see {bg.log}")
        time.sleep(0.5)


def stop_processes(demo: Demo) -> None:
    for name in reversed(PROCESSES):
        if procs.stop(name, state=demo.state):
            say(f"stopped {name}")
    confs = demo.read("webhookConfigurations") or []
    if confs and demo.kubeconfig.exists():
        for kind, name in confs:
            demo.kubectl("delete", "--ignore-not-found", "--wait=false", kind.lower(), name, check=False)
        demo.write("webhookConfigurations", [])


def up(demo: Demo) -> None:
    t0 = time.monotonic()
    demo.state.mkdir(parents=True, exist_ok=True)
    stop_processes(demo)  # `make up` twice restarts our processes, never duplicates them
    cluster_up(demo)
    install(demo)
    make_pki(demo)
    hf_endpoint = start_hub(demo)
    runtime = start_runtime(demo)
    configure(demo, runtime_address=runtime)
    start_webhook(demo)
    lws.up(demo)  # LeaderWorkerSet: CRDs, controller, webhooks (hack/lws.py)
    start_controller(demo, hf_endpoint=hf_endpoint)
    demo.write("runtimeAddress", runtime)
    demo.write("hfEndpoint", hf_endpoint)
    demo.write("mirror", not demo.env.get("HF_ENDPOINT"))
    say(f"up in {time.monotonic() - t0:.0f}s")


def order(demo: Demo, *, timeout: float = 600) -> int:
    doc = yaml.safe_load(EXAMPLE.read_text())
    ns, name = doc["metadata"]["namespace"], doc["metadata"]["name"]
    say(f"the guide's order: kubectl apply -f {EXAMPLE.relative_to(demo.root)} (namespace {ns})")
    demo.kubectl("create", "namespace", ns, check=False)
    demo.kubectl("apply", "-f", str(EXAMPLE))
    t0 = time.monotonic()
    last = ""
    obj: dict[str, Any] = {}
    while True:
        obj = json.loads(demo.kubectl("get", "inferenceservice", name, "-n", ns, "-o", "json"))
        line = chain_summary(obj)
        if line != last:
            print(f"   [{time.monotonic() - t0:5.1f}s] {line}", flush=True)
            last = line
        end = outcome(obj)
        if end is not None:
            break
        if time.monotonic() - t0 > timeout:
            say(f"not Ready after {timeout:.0f}s; logs in {demo.state}")
            return 1
        time.sleep(1)
    print(demo.kubectl("get", "inferenceservice", name, "-n", ns))
    status = obj["status"]
    print(yaml.safe_dump({"status": {k: v for k, v in status.items() if k != "conditions"}}, sort_keys=False))
    if end == "failed":
        say("the order Failed; the conditions say why (docs/faq.md):")
        print(
            demo.kubectl(
                "get",
                "inferenceservice",
                name,
                "-n",
                ns,
                "-o",
                'jsonpath={range .status.conditions[*]}{.type}={.status} {.reason}: {.message}{"\\n"}{end}',
            )
        )
        return 1
    say(f"Ready in {time.monotonic() - t0:.0f}s")
    return call_endpoint(demo, obj)


def call_endpoint(demo: Demo, obj: Mapping[str, Any]) -> int:
    status = obj["status"]
    ns = obj["metadata"]["namespace"]
    url = status["endpoint"]["url"]
    token: str | None = None
    secret = status.get("authSecretName")
    if secret:
        raw = demo.kubectl("get", "secret", secret, "-n", ns, "-o", "jsonpath={.data.token}")
        token = base64.b64decode(raw).decode()
    cmd = curl_command(
        url, token=token, ca_file=demo.pki / "platform-ca.crt", address=demo.read("runtimeAddress")
    )
    say(f"endpoint {url} ({status['endpoint'].get('type')}); the runtime stand-in answers for it locally")
    print("   export KUBECONFIG=" + str(demo.kubeconfig))
    if secret:
        print(f"   TOKEN=$(kubectl get secret {secret} -n {ns} -o jsonpath='{{.data.token}}' | base64 -d)")
    print("   " + shown(cmd, token))
    res = subprocess.run(cmd, capture_output=True, text=True, check=False)
    print(res.stdout.strip() or res.stderr.strip())
    return res.returncode


def goodbye(demo: Demo, *, with_order: bool) -> None:
    bin_dir = demo._bin_dir()
    next_step = (
        "kubectl get inferenceservice support-llm -n support -o yaml"
        if with_order
        else f"kubectl create namespace support && kubectl apply -f {EXAMPLE.relative_to(demo.root)}"
    )
    print(
        f"""
Everything keeps running. To use it:
   export KUBECONFIG={demo.kubeconfig}
   export PATH={bin_dir}:$PATH        # our kubectl, {bin_dir / "kubectl"}
   kubectl get inferenceservices -A
   {next_step}
Logs and pids: {demo.state}/ (controller.log, webhook.log, hub-mirror.log, runtime-standin.log, issuer-standin.log)
Stop everything: make down"""
    )


def status(demo: Demo) -> int:
    ok = True
    for name in PROCESSES:
        pid = procs.running(name, state=demo.state)
        print(f"{name:16s} {'running pid ' + str(pid) if pid else 'stopped'}")
        ok = ok and (pid is not None or (name == "hub-mirror" and not demo.read("mirror")))
    return 0 if ok else 1


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m hack.demo", description=__doc__.splitlines()[0] if __doc__ else None
    )
    parser.add_argument("command", choices=["demo", "up", "down", "status"])
    parser.add_argument(
        "--keep-cluster", action="store_true", help="down: leave the local control plane running"
    )
    args = parser.parse_args(argv)
    demo = Demo()
    try:
        if args.command == "status":
            return status(demo)
        if args.command == "down":
            stop_processes(demo)
            if not args.keep_cluster:
                subprocess.run(
                    [demo.python, "-m", "devtools.cluster", "down"], cwd=demo.root, env=demo.env, check=True
                )
            return 0
        t0 = time.monotonic()
        up(demo)
        rc = order(demo) if args.command == "demo" else 0
        goodbye(demo, with_order=args.command == "demo")
        say(f"{args.command} took {time.monotonic() - t0:.0f}s")
        return rc
    except (procs.ProcessError, RuntimeError, subprocess.CalledProcessError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
