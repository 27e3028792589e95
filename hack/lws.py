"""LeaderWorkerSet (``sigs.k8s.io/lws``) on the local control plane: CRDs, controller, webhooks.

The version is pinned in devtools/cluster/versions.env (LWS_VERSION). Everything comes from the Go module
proxy and is cached like cert-manager (hack/cert_manager.py) under ``<cache>/lws-<version>/``:

- ``crds/``: the module's ``config/crd/bases/*.yaml`` (LeaderWorkerSet and DisaggregatedSet: the
  manager runs a DisaggregatedSet reconciler too and will not start without its CRD);
- ``webhooks.yaml``: the module's ``config/webhook/manifests.yaml``;
- ``bin/lws-controller``: LWS's own ``cmd`` (package ``sigs.k8s.io/lws/cmd`` of the root module, so the
  proxy serves it) built unchanged with the module's own ``go.mod``.

LWS needs its webhooks: the pod webhook labels each pod (group index, worker index, group key) and
injects ``LWS_LEADER_ADDRESS``, ``LWS_GROUP_SIZE`` and ``LWS_WORKER_INDEX``; the pod controller relies on
those labels, and the LeaderWorkerSet webhook sets the defaults (``restartPolicy:
RecreateGroupOnPodRestart``, rolling update, shared subdomain). So the manager runs with its webhooks,
internal certificate management off, a serving pair from ``devtools.local_pki``, and the configurations
registered with a ``url`` client config (``https://127.0.0.1:<port>``) instead of a Service. One change
to upstream's configurations: the pod webhooks get an ``objectSelector`` on the
``leaderworkerset.sigs.k8s.io/name`` label. LWS's pod webhook returns at once for pods without it, so the
behaviour is the same, but a stopped LWS process (failurePolicy Fail) cannot block every pod creation
in the cluster.

    python -m hack.lws crds       # prints the directory holding the CRDs
    python -m hack.lws build      # builds the controller, prints its path

Used by hack/demo.py (``make up``) and tests/integration/lws_fixture.py.
"""

from __future__ import annotations

import base64
import copy
import datetime as dt
import json
import os
import pathlib
import shutil
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import yaml

from devtools.local_pki import ServingPki, make_serving_pki
from hack import procs
from hack.cert_manager import CertManagerError, cache_root, download_module, pinned_version
from hack.established import wait_established

MODULE = "sigs.k8s.io/lws"
PACKAGE = "sigs.k8s.io/lws/cmd"
BINARY = "lws-controller"
PROCESS = "lws-controller"
SET_NAME_LABEL = "leaderworkerset.sigs.k8s.io/name"
CONFIG_API_VERSION = "config.lws.x-k8s.io/v1alpha1"
CRD_NAMES = ("leaderworkersets.leaderworkerset.x-k8s.io", "disaggregatedsets.disaggregatedset.x-k8s.io")

Obj = dict[str, Any]


def crd_refs() -> list[str]:
    """``crd/<name>`` of LWS's CRDs, for kubectl."""
    return [f"crd/{n}" for n in CRD_NAMES]


class LwsError(RuntimeError):
    """The LWS module could not be fetched or built, or its controller did not come up."""


def lws_version() -> str:
    try:
        return pinned_version(key="LWS_VERSION")
    except CertManagerError as e:
        raise LwsError(str(e)) from e


def _version_dir(version: str | None, env: Mapping[str, str] | None) -> tuple[str, pathlib.Path]:
    version = version or lws_version()
    return version, cache_root(os.environ if env is None else env) / f"lws-{version}"


@dataclass(frozen=True)
class ModuleFiles:
    """The files taken from the LWS module: its CRDs and its webhook configurations."""

    crds: pathlib.Path
    webhooks: pathlib.Path


def module_files(*, version: str | None = None, env: Mapping[str, str] | None = None) -> ModuleFiles:
    """``<cache>/lws-<version>/{crds/, webhooks.yaml}``, copied from the module when missing."""
    version, root = _version_dir(version, env)
    files = ModuleFiles(crds=root / "crds", webhooks=root / "webhooks.yaml")
    if files.webhooks.is_file() and any(files.crds.glob("*.yaml")):
        return files
    try:
        src = download_module(version, module=MODULE)
    except CertManagerError as e:
        raise LwsError(str(e)) from e
    crds = sorted((src / "config" / "crd" / "bases").glob("*.yaml"))
    manifests = src / "config" / "webhook" / "manifests.yaml"
    if not crds or not manifests.is_file():
        raise LwsError(f"{src} has no config/crd/bases/*.yaml or config/webhook/manifests.yaml")
    tmp = root / "crds.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    for f in crds:
        shutil.copyfile(f, tmp / f.name)
    shutil.rmtree(files.crds, ignore_errors=True)
    tmp.rename(files.crds)
    shutil.copyfile(manifests, files.webhooks)
    return files


def build_binary(*, version: str | None = None, env: Mapping[str, str] | None = None) -> pathlib.Path:
    """``<cache>/lws-<version>/bin/lws-controller``, built from the module proxy if missing.

    ``go get sigs.k8s.io/lws/cmd@<version>`` in a scratch module takes LWS's own go.mod requirements
    (k8s.io/* and controller-runtime as upstream tested them). The build runs at the lowest CPU priority,
    one package at a time (the machine is shared).
    """
    version, root = _version_dir(version, env)
    binary = root / "bin" / BINARY
    if binary.is_file():
        return binary
    if shutil.which("go") is None:
        raise LwsError("`go` is not on PATH: LWS is built from the Go module proxy")
    environ = dict(os.environ if env is None else env)
    build_env = {**environ, "CGO_ENABLED": "0", "GOFLAGS": "-buildvcs=false", "GOWORK": "off"}
    work = root / "build"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    v = "sigs.k8s.io/lws/pkg/version"
    ldflags = f"-s -w -X {v}.GitVersion={version} -X {v}.GitCommit=module-proxy-{version}"
    steps = [
        ["go", "mod", "init", "local/lws-build"],
        ["nice", "-n", "19", "go", "get", f"{PACKAGE}@{version}"],
        ["nice", "-n", "19", "go", "build", "-p", "1", "-trimpath", "-ldflags", ldflags,
         "-o", str(binary) + ".tmp", PACKAGE],
    ]  # fmt: skip
    binary.parent.mkdir(parents=True, exist_ok=True)
    for step in steps:
        proc = subprocess.run(step, cwd=work, env=build_env, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise LwsError(f"{' '.join(step)} failed:\n{proc.stderr[-3000:]}")
    pathlib.Path(str(binary) + ".tmp").rename(binary)
    shutil.rmtree(work, ignore_errors=True)
    return binary


# ---------------------------------------------------------------- pure: configuration


def manager_config(*, webhook_port: int, health_port: int, cert_dir: pathlib.Path) -> Obj:
    """LWS's Configuration file for one local process: no leader election, no internal certificates,
    no metrics server (it would need TokenReview for its authn filter), webhooks and probes on loopback."""
    return {
        "apiVersion": CONFIG_API_VERSION,
        "kind": "Configuration",
        "leaderElection": {"leaderElect": False},
        "internalCertManagement": {"enable": False},
        "webhook": {"host": "127.0.0.1", "port": webhook_port, "certDir": str(cert_dir)},
        "metrics": {"bindAddress": "0"},
        "health": {"healthProbeBindAddress": f"127.0.0.1:{health_port}"},
    }


def webhook_configurations(
    manifests: str, *, base_url: str, ca_bundle: bytes, prefix: str = "lws-"
) -> list[Obj]:
    """LWS's webhook configurations pointed at ``base_url``, named as upstream's kustomize names them
    (``lws-`` prefix; the test fixture uses its own), with the pod webhooks narrowed to pods that carry
    the LWS name label."""
    out = []
    for doc in yaml.safe_load_all(manifests):
        if not doc:
            continue
        doc = copy.deepcopy(doc)
        doc["metadata"] = {
            "name": f"{prefix}{doc['metadata']['name']}",
            "labels": {"app.kubernetes.io/name": "lws", "app.kubernetes.io/instance": "lws-local"},
        }
        for hook in doc["webhooks"]:
            path = hook["clientConfig"]["service"]["path"]
            hook["clientConfig"] = {
                "url": base_url.rstrip("/") + path,
                "caBundle": base64.b64encode(ca_bundle).decode(),
            }
            if any("pods" in rule.get("resources", []) for rule in hook["rules"]):
                hook["objectSelector"] = {"matchExpressions": [{"key": SET_NAME_LABEL, "operator": "Exists"}]}
        out.append(doc)
    return out


def webhook_paths(configurations: Sequence[Mapping[str, Any]]) -> list[str]:
    """The URL paths the configurations call, in order."""
    return [
        str(hook["clientConfig"]["url"]).split("/", 3)[3]
        for conf in configurations
        for hook in conf["webhooks"]
    ]


# ---------------------------------------------------------------- the cluster side


Kubectl = Callable[..., str]
"""``kubectl(*args, input=None, check=True) -> stdout``, raising on failure when ``check``."""
VERSION_ANNOTATION = "inference.local/lws-version"


def installed_version(kubectl: Kubectl) -> str | None:
    """The LWS version whose CRDs are installed (our annotation), if both are there and agree."""
    out = kubectl("get", *crd_refs(), "-o", "json", check=False)
    try:
        doc = json.loads(out) if out.strip() else {}
    except json.JSONDecodeError:
        return None
    crds = doc.get("items", [doc] if doc.get("kind") else [])
    versions = {((c.get("metadata") or {}).get("annotations") or {}).get(VERSION_ANNOTATION) for c in crds}
    return versions.pop() if len(crds) == len(CRD_NAMES) and len(versions) == 1 else None


def install_crds(kubectl: Kubectl, *, field_manager: str, timeout: float = 60) -> None:
    """LWS's CRDs applied and Established. The apply of these large CRDs takes seconds, so it is skipped
    when they carry the pinned version's annotation."""
    version = lws_version()
    if installed_version(kubectl) != version:
        crds = module_files().crds
        kubectl(
            "apply", "--server-side", "--force-conflicts", f"--field-manager={field_manager}", "-f", str(crds)
        )
        kubectl("annotate", "--overwrite", *crd_refs(), f"{VERSION_ANNOTATION}={version}")
    if not wait_established(kubectl, crd_refs(), timeout=timeout):
        raise LwsError(f"LWS's CRDs are not Established after {timeout:.0f}s: {', '.join(CRD_NAMES)}")


# ---------------------------------------------------------------- the process


@dataclass(frozen=True)
class Running:
    """A started LWS controller and the webhook configurations registered for it."""

    process: procs.Background
    webhook_port: int
    health_port: int
    configurations: list[Obj]

    def references(self) -> list[list[str]]:
        """``[kind, name]`` of each configuration, as hack/demo.py records them for ``make down``."""
        return [[c["kind"], c["metadata"]["name"]] for c in self.configurations]


Apply = Callable[[str], object]
"""Applies a YAML stream (server-side) to the cluster."""


def start(
    *,
    kubeconfig: pathlib.Path,
    state: pathlib.Path,
    apply: Apply,
    binary: pathlib.Path | None = None,
    prefix: str = "lws-",
    timeout: float = 120,
) -> Running:
    """Start the LWS controller (stopping a previous one of ``state``), wait until it serves its webhooks,
    then register them. The CRDs must be installed before (the manager's informers need them)."""
    binary = binary or build_binary()
    files = module_files()
    procs.stop(PROCESS, state=state)
    pki = make_serving_pki(state / "lws-pki", now=dt.datetime.now(dt.UTC))
    webhook_port, health_port = procs.free_port(), procs.free_port()
    config = state / "lws-config.yaml"
    config.write_text(
        yaml.safe_dump(
            manager_config(webhook_port=webhook_port, health_port=health_port, cert_dir=pki.cert_file.parent)
        )
    )
    bg = procs.start(
        PROCESS,
        [str(binary), f"--kubeconfig={kubeconfig}", f"--config={config}"],
        state=state,
        cwd=state,
        env={**os.environ, "KUBECONFIG": str(kubeconfig)},
    )
    confs = webhook_configurations(
        files.webhooks.read_text(),
        base_url=f"https://127.0.0.1:{webhook_port}",
        ca_bundle=pki.ca_bundle(),
        prefix=prefix,
    )
    try:
        wait_serving(bg, pki, webhook_port, webhook_paths(confs), health_port=health_port, timeout=timeout)
        apply(yaml.safe_dump_all(confs))
    except BaseException:
        procs.stop(PROCESS, state=state)  # no detached process outlives a failed start
        if bg.process is not None:
            bg.process.wait(timeout=30)
        raise
    return Running(bg, webhook_port, health_port, confs)


def _status(url: str, *, context: ssl.SSLContext | None, data: bytes | None = None) -> int | None:
    """The HTTP status of a request, or None when nothing answers."""
    req = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=2, context=context) as r:
            return int(r.status)
    except urllib.error.HTTPError as e:
        return int(e.code)
    except OSError:
        return None


def wait_serving(
    bg: procs.Background,
    pki: ServingPki,
    webhook_port: int,
    paths: Sequence[str],
    *,
    health_port: int,
    timeout: float,
) -> None:
    """Until ``/readyz`` answers 200 and every webhook path is registered (anything but a 404: the manager
    registers its handlers after it started serving)."""
    ctx = ssl.create_default_context(cafile=str(pki.ca_file))
    deadline = time.monotonic() + timeout
    while True:
        ready = _status(f"http://127.0.0.1:{health_port}/readyz", context=None) == 200
        missing = [
            p
            for p in paths
            if _status(f"https://127.0.0.1:{webhook_port}/{p}", context=ctx, data=b"{}") in (None, 404)
        ]
        if ready and not missing:
            return
        if not procs.alive(bg.pid):
            raise LwsError(
                f"lws-controller exited; last lines of {bg.log}:\n{procs.tail(bg.log.read_text())}"
            )
        if time.monotonic() > deadline:
            why = "not ready" if not ready else f"webhooks not served: {missing}"
            raise LwsError(f"lws-controller {why} after {timeout:.0f}s; see {bg.log}")
        time.sleep(0.3)


def stop(running: Running | None, *, state: pathlib.Path, delete: Callable[[str, str], object]) -> None:
    """Unregister the webhooks (``delete(kind, name)``) and stop the process."""
    if running is not None:
        for kind, name in running.references():
            delete(kind, name)
    procs.stop(PROCESS, state=state)
    if running is not None and running.process.process is not None:
        running.process.process.wait(timeout=30)


# ---------------------------------------------------------------- make up


class DemoLike(Protocol):
    """What hack/demo.py's Demo offers (kept structural: demo.py imports this module)."""

    @property
    def kubeconfig(self) -> pathlib.Path: ...

    @property
    def state(self) -> pathlib.Path: ...

    def kubectl(self, *args: str, input: str | None = None, check: bool = True) -> str: ...

    def read(self, name: str) -> Any: ...

    def write(self, name: str, value: object) -> None: ...


def up(demo: DemoLike) -> Running:
    """``make up``: install the CRDs, start the controller, register its webhooks (recorded with the
    demo's own, so ``make down`` removes them)."""
    print(f"==> LeaderWorkerSet {lws_version()}: CRDs and controller (from its Go module)", flush=True)
    binary = build_binary()
    install_crds(demo.kubectl, field_manager="demo")

    def apply(text: str) -> object:
        return demo.kubectl(
            "apply", "--server-side", "--force-conflicts", "--field-manager=demo", "-f", "-", input=text
        )

    running = start(kubeconfig=demo.kubeconfig, state=demo.state, apply=apply, binary=binary)
    recorded = [list(r) for r in demo.read("webhookConfigurations") or []]
    demo.write("webhookConfigurations", recorded + [r for r in running.references() if r not in recorded])
    return running


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args not in (["crds"], ["build"]):
        print("usage: python -m hack.lws crds|build", file=sys.stderr)
        return 2
    try:
        print(module_files().crds if args == ["crds"] else build_binary())
    except LwsError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
