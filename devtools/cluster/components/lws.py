"""LeaderWorkerSet (``sigs.k8s.io/lws``) on the local plane: CRDs, controller, webhooks.

The version is pinned in devtools/cluster/versions.env (LWS_VERSION). Everything comes from the Go module
proxy and is cached like cert-manager under ``<cache>/lws-<version>/``:

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
(lws_config.py) registered with a ``url`` client config (``https://127.0.0.1:<port>``) instead of a
Service.

    python -m hack.lws crds|build      # prints the directory holding the CRDs / the controller's path

Started by the demo (hack/demo) and tests/integration/lws_fixture.py.
"""

from __future__ import annotations

import datetime as dt
import os
import pathlib
import shutil
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import yaml

from devtools import procs
from devtools.cluster.components.base import Kubectl, Target
from devtools.cluster.components.lws_config import (
    CRD_NAMES,
    VERSION_ANNOTATION,
    Obj,
    crd_refs,
    installed_version,
    manager_config,
    webhook_configurations,
    webhook_paths,
)
from devtools.cluster.config import VersionError, cache_root, pinned_version
from devtools.cluster.established import wait_established
from devtools.cluster.gomod import GoModuleError, download_module
from devtools.local_pki import ServingPki, make_serving_pki

MODULE = "sigs.k8s.io/lws"
PACKAGE = "sigs.k8s.io/lws/cmd"
BINARY = "lws-controller"
PROCESS = "lws-controller"


class LwsError(RuntimeError):
    """The LWS module could not be fetched or built, or its controller did not come up."""


def version() -> str:
    try:
        return pinned_version("LWS_VERSION")
    except VersionError as e:
        raise LwsError(str(e)) from e


def _version_dir(pinned: str | None, env: Mapping[str, str] | None) -> tuple[str, pathlib.Path]:
    v = pinned or version()
    return v, cache_root(env) / f"lws-{v}"


@dataclass(frozen=True)
class ModuleFiles:
    """The files taken from the LWS module: its CRDs and its webhook configurations."""

    crds: pathlib.Path
    webhooks: pathlib.Path


def module_files(*, pinned: str | None = None, env: Mapping[str, str] | None = None) -> ModuleFiles:
    """``<cache>/lws-<version>/{crds/, webhooks.yaml}``, copied from the module when missing."""
    v, root = _version_dir(pinned, env)
    files = ModuleFiles(crds=root / "crds", webhooks=root / "webhooks.yaml")
    if files.webhooks.is_file() and any(files.crds.glob("*.yaml")):
        return files
    try:
        src = download_module(MODULE, v)
    except GoModuleError as e:
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


def build(*, pinned: str | None = None, env: Mapping[str, str] | None = None) -> pathlib.Path:
    """``<cache>/lws-<version>/bin/lws-controller``, built from the module proxy if missing.

    ``go get sigs.k8s.io/lws/cmd@<version>`` in a scratch module takes LWS's own go.mod requirements
    (k8s.io/* and controller-runtime as upstream tested them). The build runs at the lowest CPU priority,
    one package at a time (the machine is shared).
    """
    v, root = _version_dir(pinned, env)
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
    pkg = "sigs.k8s.io/lws/pkg/version"
    ldflags = f"-s -w -X {pkg}.GitVersion={v} -X {pkg}.GitCommit=module-proxy-{v}"
    steps = [
        ["go", "mod", "init", "local/lws-build"],
        ["nice", "-n", "19", "go", "get", f"{PACKAGE}@{v}"],
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


def install_crds(kubectl: Kubectl, *, field_manager: str, timeout: float = 60) -> None:
    """LWS's CRDs applied and Established. The apply of these large CRDs takes seconds, so it is skipped
    when they carry the pinned version's annotation."""
    v = version()
    if installed_version(kubectl) != v:
        crds = module_files().crds
        kubectl(
            "apply", "--server-side", "--force-conflicts", f"--field-manager={field_manager}", "-f", str(crds)
        )
        kubectl("annotate", "--overwrite", *crd_refs(), f"{VERSION_ANNOTATION}={v}")
    if not wait_established(kubectl, crd_refs(), timeout=timeout):
        raise LwsError(f"LWS's CRDs are not Established after {timeout:.0f}s: {', '.join(CRD_NAMES)}")


@dataclass(frozen=True)
class Running:
    """A started LWS controller and the webhook configurations registered for it."""

    process: procs.Background
    webhook_port: int
    health_port: int
    configurations: list[Obj]
    pki: ServingPki

    def references(self) -> list[list[str]]:
        """``[kind, name]`` of each configuration, as the demo records them for ``make down``."""
        return [[c["kind"], c["metadata"]["name"]] for c in self.configurations]


def start(
    target: Target, *, prefix: str = "lws-", binary: pathlib.Path | None = None, timeout: float = 120
) -> Running:
    """Start the LWS controller (stopping a previous one of ``target.state``), wait until it serves its
    webhooks, then register them (named ``<prefix>...``). The CRDs must be installed before (the
    manager's informers need them)."""
    binary = binary or build()
    files = module_files()
    state = target.state
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
        [str(binary), f"--kubeconfig={target.kubeconfig}", f"--config={config}"],
        state=state,
        cwd=state,
        env={**os.environ, "KUBECONFIG": str(target.kubeconfig)},
    )
    confs = webhook_configurations(
        files.webhooks.read_text(),
        base_url=f"https://127.0.0.1:{webhook_port}",
        ca_bundle=pki.ca_bundle(),
        prefix=prefix,
    )
    running = Running(bg, webhook_port, health_port, confs, pki)
    try:
        wait_serving(running, timeout=timeout)
        target.apply(yaml.safe_dump_all(confs))
    except BaseException:
        procs.stop(PROCESS, state=state)  # no detached process outlives a failed start
        if bg.process is not None:
            bg.process.wait(timeout=30)
        raise
    return running


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


def unserved(running: Running) -> list[str]:
    """What is not served yet: ``readyz`` unless ``/readyz`` answers 200, and each webhook path that
    is not registered (None or 404: the manager registers its handlers after it started serving)."""
    out = [] if _status(f"http://127.0.0.1:{running.health_port}/readyz", context=None) == 200 else ["readyz"]
    ctx = ssl.create_default_context(cafile=str(running.pki.ca_file))
    base = f"https://127.0.0.1:{running.webhook_port}"
    for p in webhook_paths(running.configurations):
        if _status(f"{base}/{p}", context=ctx, data=b"{}") in (None, 404):
            out.append(p)
    return out


def ready(handle: Running) -> bool:
    """The controller is ready and serves every webhook."""
    return not unserved(handle)


def wait_serving(running: Running, *, timeout: float) -> None:
    """Until ``ready``; LwsError when the process exits or after ``timeout`` seconds."""
    bg = running.process
    deadline = time.monotonic() + timeout
    while True:
        missing = unserved(running)
        if not missing:
            return
        if not procs.alive(bg.pid):
            raise LwsError(
                f"lws-controller exited; last lines of {bg.log}:\n{procs.tail(bg.log.read_text())}"
            )
        if time.monotonic() > deadline:
            why = "not ready" if "readyz" in missing else f"webhooks not served: {missing}"
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
