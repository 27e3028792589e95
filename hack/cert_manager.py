"""cert-manager's CRDs, taken from the cert-manager Go module through the module proxy.

The version is pinned in devtools/cluster/versions.env (CERT_MANAGER_VERSION). ``go mod download``
puts the module in the Go module cache; its ``deploy/crds/*.yaml`` are copied to
``<cache>/cert-manager-<version>/crds`` (the same cache as the control-plane binaries), so later
calls cost nothing. Used by hack/demo.py and the deploy tests:

    python -m hack.cert_manager crds      # prints the directory holding the CRD files
    python -m hack.cert_manager build     # builds controller + cainjector, prints their directory

cert-manager's own commands live in separate Go modules (cmd/controller, cmd/cainjector) that the module
proxy does not serve, so ``build`` compiles two small mains of ours (hack/cert-manager/*/main.go) against
the cert-manager module's packages: the CA and SelfSigned issuers with the Certificate lifecycle, and the
CA injector for webhook configurations. Enough to issue this project's PKI for real on the local
control plane.
"""

from __future__ import annotations

import hashlib
import json
import os
import pathlib
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence

ROOT = pathlib.Path(__file__).resolve().parent.parent
VERSIONS_ENV = ROOT / "devtools" / "cluster" / "versions.env"
MODULE = "github.com/cert-manager/cert-manager"


class CertManagerError(RuntimeError):
    """The cert-manager module could not be fetched or does not hold what we expect."""


def read_versions(text: str) -> dict[str, str]:
    """``KEY=VALUE`` lines of versions.env (comments and blanks ignored)."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.partition("=")
        out[key.strip()] = value.strip().strip('"')
    return out


def pinned_version(versions_env: pathlib.Path = VERSIONS_ENV, *, key: str = "CERT_MANAGER_VERSION") -> str:
    version = read_versions(versions_env.read_text()).get(key)
    if not version:
        raise CertManagerError(f"{key} is not set in {versions_env}")
    return version


def cache_root(env: Mapping[str, str]) -> pathlib.Path:
    """The cache of devtools/cluster/build.sh: $INFERENCE_CACHE, else $XDG_CACHE_HOME or ~/.cache."""
    if env.get("INFERENCE_CACHE"):
        return pathlib.Path(env["INFERENCE_CACHE"])
    xdg = env.get("XDG_CACHE_HOME")
    base = pathlib.Path(xdg) if xdg else pathlib.Path.home() / ".cache"
    return base / "inference-control-plane"


def crd_files(module_dir: pathlib.Path) -> list[pathlib.Path]:
    """The CRD manifests in a cert-manager module tree, sorted; an error if there are none."""
    files = sorted((module_dir / "deploy" / "crds").glob("*.yaml"))
    if not files:
        raise CertManagerError(f"no deploy/crds/*.yaml in {module_dir}")
    return files


def download_module(version: str, *, go: str = "go", module: str = MODULE) -> pathlib.Path:
    """``go mod download -json`` the module (cert-manager unless told); returns its extracted directory."""
    if shutil.which(go) is None:
        raise CertManagerError(f"`go` is not on PATH: {module} comes from the Go module proxy")
    proc = subprocess.run(
        [go, "mod", "download", "-json", f"{module}@{version}"],
        capture_output=True,
        text=True,
        check=False,
        cwd=pathlib.Path.home(),
        env={**os.environ, "GOFLAGS": "-mod=mod"},
    )
    try:
        info = json.loads(proc.stdout or "{}")
    except json.JSONDecodeError as e:
        raise CertManagerError(f"go mod download: unreadable output: {proc.stdout[:200]!r}") from e
    if proc.returncode != 0 or info.get("Error") or not info.get("Dir"):
        why = info.get("Error") or proc.stderr
        raise CertManagerError(f"go mod download {module}@{version} failed: {why}")
    return pathlib.Path(info["Dir"])


def crds_dir(*, version: str | None = None, env: Mapping[str, str] | None = None) -> pathlib.Path:
    """The directory holding cert-manager's CRDs at ``version`` (default: pinned), fetched if missing."""
    version = version or pinned_version()
    target = cache_root(os.environ if env is None else env) / f"cert-manager-{version}" / "crds"
    if target.is_dir() and any(target.glob("*.yaml")):
        return target
    files = crd_files(download_module(version))
    tmp = target.with_name("crds.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    for f in files:
        shutil.copyfile(f, tmp / f.name)
    shutil.rmtree(target, ignore_errors=True)
    tmp.rename(target)
    return target


MAINS = ROOT / "hack" / "cert-manager"
BINARIES = ("controller", "cainjector")


def mains_digest(mains: pathlib.Path = MAINS) -> str:
    """A short digest of our mains' sources: a changed main (a new flag) is a new cache entry."""
    h = hashlib.sha256()
    for f in sorted(p for p in mains.rglob("*") if p.is_file()):
        h.update(f.relative_to(mains).as_posix().encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()[:12]


def build_binaries(*, version: str | None = None, env: Mapping[str, str] | None = None) -> pathlib.Path:
    """``<cache>/cert-manager-<version>/bin-<digest of our mains>`` with ``controller`` and
    ``cainjector``, built if missing.

    The build runs at the lowest CPU priority with one package at a time (the machine is shared).
    """
    version = version or pinned_version()
    environ = dict(os.environ if env is None else env)
    out = cache_root(environ) / f"cert-manager-{version}" / f"bin-{mains_digest()}"
    if all((out / b).is_file() for b in BINARIES):
        return out
    if shutil.which("go") is None:
        raise CertManagerError("`go` is not on PATH: cert-manager is built from the Go module proxy")
    work = out.with_name(f"build-{out.name}")
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(MAINS, work)
    (work / "go.mod").write_text(
        f"module local/cert-manager-build\n\ngo 1.26.0\n\nrequire {MODULE} {version}\n"
    )
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


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args not in (["crds"], ["build"]):
        print("usage: python -m hack.cert_manager crds|build", file=sys.stderr)
        return 2
    try:
        print(crds_dir() if args == ["crds"] else build_binaries())
    except CertManagerError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
