"""cert-manager on the local plane: its CRDs, and its controller and cainjector as local processes.

The version is pinned in devtools/cluster/versions.env (CERT_MANAGER_VERSION). ``go mod download`` puts
the module in the Go module cache; its ``deploy/crds/*.yaml`` are copied to
``<cache>/cert-manager-<version>/crds`` (the same cache as the plane's binaries), so later calls cost
nothing. cert-manager's own commands live in separate Go modules (cmd/controller, cmd/cainjector) that
the module proxy does not serve, so ``build`` compiles two small mains of ours (``cert-manager/*/main.go``
beside this file) against the module's packages: the CA and SelfSigned issuers with the Certificate
lifecycle, and the CA injector for webhook configurations, into ``<cache>/cert-manager-<version>/bin``.

    python -m hack.cert_manager crds|build      # prints the directory
"""

from __future__ import annotations

import hashlib
import os
import pathlib
import shutil
import subprocess
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager

from devtools import procs
from devtools.cluster.components.base import Target
from devtools.cluster.config import VersionError, cache_root, pinned_version
from devtools.cluster.gomod import GoModuleError, download_module

MODULE = "github.com/cert-manager/cert-manager"
MAINS = pathlib.Path(__file__).resolve().parent / "cert-manager"
BINARIES = ("controller", "cainjector")
CRDS = ("certificates", "certificaterequests", "issuers", "clusterissuers")
READY_LINE = r"\(local\) running"  # what each process logs once it leads (it runs alone)


class CertManagerError(RuntimeError):
    """The cert-manager module could not be fetched, does not hold what we expect, or did not build."""


def version() -> str:
    try:
        return pinned_version("CERT_MANAGER_VERSION")
    except VersionError as e:
        raise CertManagerError(str(e)) from e


def crd_files(module_dir: pathlib.Path) -> list[pathlib.Path]:
    """The CRD manifests in a cert-manager module tree, sorted; an error if there are none."""
    files = sorted((module_dir / "deploy" / "crds").glob("*.yaml"))
    if not files:
        raise CertManagerError(f"no deploy/crds/*.yaml in {module_dir}")
    return files


def _module(version: str) -> pathlib.Path:
    try:
        return download_module(MODULE, version)
    except GoModuleError as e:
        raise CertManagerError(str(e)) from e


def crds_dir(*, pinned: str | None = None, env: Mapping[str, str] | None = None) -> pathlib.Path:
    """The directory holding cert-manager's CRDs at version ``pinned`` (default: versions.env's), fetched if missing."""
    v = pinned or version()
    target = cache_root(env) / f"cert-manager-{v}" / "crds"
    if target.is_dir() and any(target.glob("*.yaml")):
        return target
    files = crd_files(_module(v))
    tmp = target.with_name("crds.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    for f in files:
        shutil.copyfile(f, tmp / f.name)
    shutil.rmtree(target, ignore_errors=True)
    tmp.rename(target)
    return target


def mains_digest(mains: pathlib.Path = MAINS) -> str:
    """A short digest of our mains' sources: a changed main (a new flag) is a new cache entry."""
    h = hashlib.sha256()
    for f in sorted(p for p in mains.rglob("*") if p.is_file()):
        h.update(f.relative_to(mains).as_posix().encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()[:12]


def build(*, pinned: str | None = None, env: Mapping[str, str] | None = None) -> pathlib.Path:
    """``<cache>/cert-manager-<version>/bin-<digest of our mains>`` with ``controller`` and
    ``cainjector``, built if missing.

    The build runs at the lowest CPU priority with one package at a time (the machine is shared).
    """
    v = pinned or version()
    environ = dict(os.environ if env is None else env)
    out = cache_root(environ) / f"cert-manager-{v}" / f"bin-{mains_digest()}"
    if all((out / b).is_file() for b in BINARIES):
        return out
    if shutil.which("go") is None:
        raise CertManagerError("`go` is not on PATH: cert-manager is built from the Go module proxy")
    work = out.with_name(f"build-{out.name}")
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(MAINS, work)
    (work / "go.mod").write_text(f"module local/cert-manager-build\n\ngo 1.26.0\n\nrequire {MODULE} {v}\n")
    build_env = {**environ, "CGO_ENABLED": "0", "GOFLAGS": "-buildvcs=false"}
    steps = [
        ["nice", "-n", "19", "go", "mod", "tidy"],
        ["nice", "-n", "19", "go", "build", "-p", "1", "-trimpath", "-ldflags", "-s -w", "-o", str(out) + "/",
         *[f"./{b}" for b in BINARIES]],
    ]  # fmt: skip
    out.mkdir(parents=True, exist_ok=True)
    for step in steps:
        proc = subprocess.run(step, cwd=work, env=build_env, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise CertManagerError(f"{' '.join(step)} failed:\n{proc.stderr[-3000:]}")
    shutil.rmtree(work, ignore_errors=True)
    return out


def install_crds(target: Target) -> None:
    """cert-manager's CRDs applied and Established."""
    fm = f"--field-manager={target.field_manager}"
    target.kubectl("apply", "--server-side", "--force-conflicts", fm, "-f", str(crds_dir()))
    refs = (f"crd/{c}.cert-manager.io" for c in CRDS)
    target.kubectl("wait", "--for=condition=Established", "--timeout=60s", *refs)


def start(
    target: Target,
    binaries: Sequence[str] = BINARIES,
    *,
    controller_args: Sequence[str] = (),
    kubeconfig: pathlib.Path | str | None = None,
) -> list[procs.Background]:
    """The processes (``controller``, ``cainjector``) started against the plane, in ``target.state``.

    ``controller_args`` adds flags to the controller (approver-policy's ``CERT_MANAGER_CONTROLLERS``);
    ``kubeconfig`` runs the processes as another user than the plane's admin."""
    bin_dir = build()
    for ns in ("cert-manager", "d8-inference"):
        target.kubectl("create", "namespace", ns, check=False)
    extra = {"controller": ["--cluster-resource-namespace=cert-manager", *controller_args]}
    config = kubeconfig or target.kubeconfig
    return [
        procs.start(
            name,
            [str(bin_dir / name), f"--kubeconfig={config}", *extra.get(name, [])],
            state=target.state,
            cwd=target.state,
        )
        for name in binaries
    ]


def ready(handle: Sequence[procs.Background]) -> bool:
    """Every process has logged that it runs."""
    return all(procs.has_line(bg, READY_LINE) for bg in handle)


def stop(handle: Sequence[procs.Background], *, state: pathlib.Path) -> None:
    for bg in handle:
        procs.stop(bg.name, state=state)
        if bg.process is not None:
            bg.process.wait(timeout=30)


@contextmanager
def running(
    target: Target,
    *,
    binaries: Sequence[str] = BINARIES,
    timeout: float = 120,
    controller_args: Sequence[str] = (),
    kubeconfig: pathlib.Path | str | None = None,
) -> Iterator[None]:
    """CRDs installed, the processes started and ready until the ``with`` block ends."""
    build()
    install_crds(target)
    started = start(target, binaries, controller_args=controller_args, kubeconfig=kubeconfig)
    try:
        for bg in started:
            procs.wait_for_line(bg, READY_LINE, timeout=timeout)
        yield
    finally:
        stop(started, state=target.state)
