"""The steps of ``make up``, in order: the plane, the CRDs and the module's objects, the PKI, the Hub
mirror, the runtime stand-in, the settings, the webhook, LeaderWorkerSet, the controller. Each is a plain
function over ``Demo``; bench.scale runs some of them on its own plane."""

from __future__ import annotations

import json
import pathlib
import ssl
import subprocess
import time
import urllib.request

import yaml

from devtools import procs, tiny_models
from devtools.cluster import pki
from devtools.cluster.components import cert_manager, keda, lws, vllm_cpu
from devtools.cluster.components.base import Target
from devtools.cluster.established import wait_established
from devtools.cluster.identity import service_account_kubeconfig
from devtools.product.controller import NAMESPACE, SETTINGS_CONFIGMAP, ControllerProcess
from hack.demo.state import Demo, say
from standins import local_webhook

SETTINGS = SETTINGS_CONFIGMAP
LOCAL_OVERLAY = pathlib.Path(__file__).resolve().parents[2] / "deploy" / "overlays" / "local"
OUR_CRDS = ("inferenceservices", "inferenceserviceclasses", "inferencerecipes")
# Local process names, in start order; `down` stops them in reverse.
PROCESSES = (
    "hub-mirror",
    "issuer-standin",
    "runtime-standin",
    "plane-runner",
    "webhook",
    "lws-controller",
    "controller",
)
CONTROLLER_METRICS_PORT = 18080
CONTROLLER_HEALTH_PORT = 18081
HUB_MIRROR_LINE = r"HF mirror listening on (http://\S+)"
RUNTIME_LINE = r"runtime stand-in listening on https://([0-9.]+):(\d+) \(control (http://\S+)\)"
PLANE_RUNNER_LINE = r"plane runner up"
ISSUER_LINE = r"issuer stand-in running"


def cluster_up(demo: Demo) -> None:
    say("local control plane: python -m devtools.cluster up (a first run builds it from the module proxy)")
    subprocess.run([demo.python, "-m", "devtools.cluster", "up"], cwd=demo.root, env=demo.env, check=True)
    (demo.state / "bin-dir").unlink(missing_ok=True)


def install(demo: Demo) -> None:
    say(
        "cert-manager and KEDA CRDs (from their Go modules), our CRDs, RBAC, the default-llm class, the vllm recipe"
    )
    apply = ("apply", "--server-side", "--force-conflicts", "--field-manager=demo")
    demo.kubectl(*apply, "-f", str(cert_manager.crds_dir()))
    demo.kubectl(*apply, "-f", str(keda.crds_dir()))
    demo.kubectl(*apply, "-k", str(demo.root / "deploy" / "crds"))
    names = [f"crd/{n}.ai.deckhouse.io" for n in OUR_CRDS]
    names += ["crd/certificates.cert-manager.io", "crd/scaledobjects.keda.sh"]
    if not wait_established(demo.kubectl, names, timeout=120):
        raise RuntimeError(f"CRDs not Established after 120 s: {', '.join(names)}")
    demo.kubectl(*apply, "-k", str(LOCAL_OVERLAY))


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


def real_runtime(demo: Demo) -> None:
    """The pinned vLLM's CPU environment (built on a cold machine, ~6 min) and the tiny models built with
    it: what the plane runner serves the tiny orders with."""
    say(f"the real runtime: vllm-cpu {vllm_cpu.version()} in the cache (built once) and the tiny models")
    vllm_cpu.locate()
    tiny_models.ensure_built()


def start_hub(demo: Demo, *, tiny: bool = True) -> str:
    if demo.env.get("HF_ENDPOINT"):
        say(f"Hugging Face endpoint from HF_ENDPOINT: {demo.env['HF_ENDPOINT']} (no mirror started)")
        return demo.env["HF_ENDPOINT"].rstrip("/")
    say("Hugging Face mirror stand-in (python -m standins.hub_mirror), with the tiny real models")
    bg = procs.start(
        "hub-mirror",
        [
            demo.python,
            "-m",
            "standins.hub_mirror",
            "--host",
            "127.0.0.1",
            "--port",
            "0",
            *(["--tiny"] if tiny else []),
        ],
        state=demo.state,
        cwd=demo.root,
        env=demo.env,
    )
    return procs.wait_for_line(bg, HUB_MIRROR_LINE, timeout=60).group(1)


def start_runtime(
    demo: Demo, *, cache_seconds: float | None = None, issuer_period: float = 1.0
) -> tuple[str, str]:
    """The runtime stand-in; ``cache_seconds``: how long it keeps an order and its token Secret.
    It serves only the certificates the platform issued, so the issuer stand-in starts with it
    (every ``issuer_period`` seconds a pass over the Certificates). Returns its address (host:port)
    and its control URL."""
    say("runtime stand-in (python -m standins.runtime): answers for every order; real runtimes need GPUs")
    cache = ["--cache-seconds", f"{cache_seconds:g}"] if cache_seconds is not None else []
    bg = procs.start(
        "runtime-standin",
        [
            demo.python, "-m", "standins.runtime",
            "--host", "127.0.0.1",
            "--port", "0",
            "--kubeconfig", str(demo.kubeconfig),
            *cache,
        ],
        state=demo.state,
        cwd=demo.root,
        env=demo.env,
    )  # fmt: skip
    match = procs.wait_for_line(bg, RUNTIME_LINE, timeout=60)
    start_issuer(demo, period=issuer_period)
    return f"{match.group(1)}:{match.group(2)}", match.group(3)


def start_plane_runner(demo: Demo, *, control_url: str) -> None:
    """The plane runner (devtools/podrunner/plane.py): the pods of orders whose files weigh at most
    64 MiB run as real vLLM processes here, behind the stand-in's address. Needs root."""
    say(
        "plane runner (python -m devtools.podrunner): a real vLLM for tiny-model orders, the stand-in for the rest"
    )
    bg = procs.start(
        "plane-runner",
        [demo.python, "-m", "devtools.podrunner", "--kubeconfig", str(demo.kubeconfig),
         "--standin-control", control_url, "--state", str(demo.state / "podrunner")],
        state=demo.state,
        cwd=demo.root,
        env=demo.env,
    )  # fmt: skip
    procs.wait_for_line(bg, PLANE_RUNNER_LINE, timeout=600)


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
            demo.python, "-m", "webhook",
            "--cert-file", str(demo.pki / "webhook.crt"),
            "--key-file", str(demo.pki / "webhook.key"),
            "--host", "127.0.0.1",
            "--port", str(port),
        ],
        state=demo.state,
        cwd=demo.root,
        env=demo.env,
    )  # fmt: skip
    wait_https(bg, port, ca_file=demo.pki / "webhook-ca.crt")
    confs = local_webhook.configurations(
        base_url=f"https://127.0.0.1:{port}", ca_bundle=(demo.pki / "webhook-ca.crt").read_bytes()
    )
    text = yaml.safe_dump_all(confs)
    demo.kubectl("apply", "--server-side", "--force-conflicts", "--field-manager=demo", "-f", "-", input=text)
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


def start_lws(demo: Demo) -> lws.Running:
    """LeaderWorkerSet: install the CRDs, start the controller, register its webhooks (recorded with the
    demo's own, so ``make down`` removes them)."""
    say(f"LeaderWorkerSet {lws.version()}: CRDs and controller (from its Go module)")
    binary = lws.build()
    lws.install_crds(demo.kubectl, field_manager="demo")
    target = Target(demo.kubeconfig, demo.state, demo.kubectl, field_manager="demo")
    running = lws.start(target, binary=binary)
    recorded = [list(r) for r in demo.read("webhookConfigurations") or []]
    demo.write("webhookConfigurations", recorded + [r for r in running.references() if r not in recorded])
    return running


def controller_process(demo: Demo, *, env: dict[str, str], kubeconfig: pathlib.Path) -> ControllerProcess:
    """The demo's controller: fixed ports, one ``controller.log`` under the demo's state."""
    return ControllerProcess(
        kubeconfig=kubeconfig,
        env=env,
        log_dir=demo.state,
        ports=(CONTROLLER_METRICS_PORT, CONTROLLER_HEALTH_PORT),
        log_each_start=False,
        ready_timeout=120,
        python=demo.python,
        cwd=demo.root,
    )


def controller_kubeconfig(demo: Demo) -> pathlib.Path:
    """A kubeconfig of the controller's ServiceAccount: it runs under the shipped RBAC, never as admin."""
    return service_account_kubeconfig(
        kubectl=demo.bin_dir() / "kubectl",
        admin_kubeconfig=demo.kubeconfig,
        namespace=NAMESPACE,
        name="inference-controller",
        out=demo.state / "controller.kubeconfig",
    )


def start_controller(demo: Demo, *, hf_endpoint: str) -> None:
    say(
        f"controller (python -m controller) as ServiceAccount {NAMESPACE}/inference-controller, Hub {hf_endpoint}"
    )
    env = {**demo.env, "HF_ENDPOINT": hf_endpoint}
    controller_process(demo, env=env, kubeconfig=controller_kubeconfig(demo)).start()


def stop_processes(demo: Demo) -> None:
    for name in reversed(PROCESSES):
        if procs.stop(name, state=demo.state):
            say(f"stopped {name}")
    confs = demo.read("webhookConfigurations") or []
    if confs and demo.kubeconfig.exists():
        for kind, name in confs:
            demo.kubectl("delete", "--ignore-not-found", "--wait=false", kind.lower(), name, check=False)
        demo.write("webhookConfigurations", [])
