"""cert-manager's approver-policy on the local plane: its CRD, and its controller as a local process.

One component, four verbs (``version``, ``build``, ``start``, ``ready``), like cert-manager and LWS.
The version is pinned in devtools/cluster/versions.env (APPROVER_POLICY_VERSION). Everything comes from
the Go module proxy and is cached by version under ``<cache>/approver-policy-<version>/``:

- ``crds/``: the module's ``deploy/crds/*.yaml`` (CertificateRequestPolicy, policy.cert-manager.io);
- ``bin/approver-policy``: upstream's own main (``cmd`` of the root module, which the proxy serves),
  built unchanged with the module's own requirements (``go get <module>/cmd@<version>`` in a scratch
  module; the module has no replace directives). The build holds ``<cache>/.build.lock`` like
  devtools/cluster/build.sh, so one Go build runs at a time on the machine.

With approver-policy deciding, cert-manager's own approver must be off (``CERT_MANAGER_CONTROLLERS``):
otherwise it approves every request before a policy is consulted. Locally the process runs with the
admin kubeconfig (it needs to create SubjectAccessReviews and approve requests), its metrics off, its
readiness probe and its (unregistered) webhook on loopback ports, and leader election in
``cert-manager``; ``ready`` waits for the lease, after which it decides.

approver-policy binds a policy to the requester named in ``spec.username``/``spec.groups`` of the
CertificateRequest, which cert-manager's webhook stamps from the creating request's user
(cert-manager's internal/webhook/admission/certificaterequest/identity). The local plane runs no
cert-manager webhook, so ``identity_policy`` does the same in the API server: a MutatingAdmissionPolicy
(admissionregistration.k8s.io/v1) that sets both on every CertificateRequest created.

    python -m hack.approver_policy crds      # prints the directory holding the CRD (hack/approver_policy.py)
    python -m hack.approver_policy build     # builds the controller, prints its path

Used by tests/integration/test_certificate_policy.py.
"""

from __future__ import annotations

import contextlib
import os
import pathlib
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from devtools import procs
from devtools.cluster.config import VersionError, cache_root, pinned_version
from devtools.cluster.gomod import GoModuleError, build_lock, download_module

MODULE = "github.com/cert-manager/approver-policy"
PACKAGE = f"{MODULE}/cmd"
BINARY = "approver-policy"
CRD = "certificaterequestpolicies.policy.cert-manager.io"
NAMESPACE = "cert-manager"
# cert-manager's flag (and our local main's, devtools/cluster/components/cert-manager/controller): every controller but its
# own approver, so that approver-policy alone approves or denies.
CERT_MANAGER_CONTROLLERS = "--controllers=*,-certificaterequests-approver"
# controller-runtime's leader election (logger controller-manager/leaderelection), once this process
# leads and so decides; compared without case.
READY_LINE = "successfully acquired lease"

IDENTITY_POLICY = "local-certificaterequest-identity"

Obj = dict[str, Any]
Kubectl = Callable[..., object]
"""``kubectl(*args, ...)``, raising on failure."""


class ApproverPolicyError(RuntimeError):
    """approver-policy could not be fetched or built, or its controller did not come up."""


def version() -> str:
    try:
        return pinned_version("APPROVER_POLICY_VERSION")
    except VersionError as e:
        raise ApproverPolicyError(str(e)) from e


def _root(pinned: str | None, env: Mapping[str, str] | None) -> pathlib.Path:
    return cache_root(env) / f"approver-policy-{pinned or version()}"


def crds_dir(*, pinned: str | None = None, env: Mapping[str, str] | None = None) -> pathlib.Path:
    """``<cache>/approver-policy-<version>/crds``, copied from the module when missing."""
    target = _root(pinned, env) / "crds"
    if target.is_dir() and any(target.glob("*.yaml")):
        return target
    try:
        src = download_module(MODULE, pinned or version())
    except GoModuleError as e:
        raise ApproverPolicyError(str(e)) from e
    files = sorted((src / "deploy" / "crds").glob("*.yaml"))
    if not files:
        raise ApproverPolicyError(f"no deploy/crds/*.yaml in {src}")
    tmp = target.with_name("crds.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    for f in files:
        shutil.copyfile(f, tmp / f.name)
    shutil.rmtree(target, ignore_errors=True)
    tmp.rename(target)
    return target


def build_steps(pinned: str, out: pathlib.Path) -> list[list[str]]:
    """The commands of a build in an empty scratch directory: upstream's main with upstream's go.mod
    requirements, at the lowest CPU priority, one package at a time (the machine is shared)."""
    return [
        ["go", "mod", "init", "local/approver-policy-build"],
        ["nice", "-n", "19", "go", "get", f"{PACKAGE}@{pinned}"],
        ["nice", "-n", "19", "go", "build", "-p", "1", "-trimpath", "-ldflags", "-s -w", "-o", str(out), PACKAGE],
    ]  # fmt: skip


def build(*, pinned: str | None = None, env: Mapping[str, str] | None = None) -> pathlib.Path:
    """``<cache>/approver-policy-<version>/bin/approver-policy``, built from the module proxy if missing."""
    pinned = pinned or version()
    environ = dict(os.environ if env is None else env)
    root = _root(pinned, environ)
    binary = root / "bin" / BINARY
    if binary.is_file():
        return binary
    if shutil.which("go") is None:
        raise ApproverPolicyError("`go` is not on PATH: approver-policy is built from the Go module proxy")
    build_env = {**environ, "CGO_ENABLED": "0", "GOFLAGS": "-buildvcs=false", "GOWORK": "off"}
    with build_lock(cache_root(environ)):
        if binary.is_file():  # another session built it while we waited
            return binary
        work = root / "build"
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        binary.parent.mkdir(parents=True, exist_ok=True)
        tmp = binary.with_name(f"{BINARY}.tmp")
        for step in build_steps(pinned, tmp):
            proc = subprocess.run(step, cwd=work, env=build_env, capture_output=True, text=True, check=False)
            if proc.returncode != 0:
                raise ApproverPolicyError(f"{' '.join(step)} failed:\n{proc.stderr[-3000:]}")
        tmp.rename(binary)
        shutil.rmtree(work, ignore_errors=True)
    return binary


def argv(binary: pathlib.Path, *, kubeconfig: pathlib.Path, ready_port: int, webhook_port: int) -> list[str]:
    """The local process's command line: no metrics, probe and webhook on loopback, lease in
    ``cert-manager`` (the webhook's CA Secret goes there too; nothing registers the webhook locally)."""
    return [
        str(binary),
        f"--kubeconfig={kubeconfig}",
        f"--leader-election-namespace={NAMESPACE}",
        "--metrics-bind-address=0",
        f"--readiness-probe-bind-address=127.0.0.1:{ready_port}",
        "--webhook-host=127.0.0.1",
        f"--webhook-port={webhook_port}",
        f"--webhook-ca-secret-namespace={NAMESPACE}",
    ]


def install_crds(kubectl: Kubectl, *, field_manager: str) -> None:
    """approver-policy's CRD applied and Established."""
    fm = f"--field-manager={field_manager}"
    kubectl("apply", "--server-side", "--force-conflicts", fm, "-f", str(crds_dir()))
    kubectl("wait", "--for=condition=Established", "--timeout=60s", f"crd/{CRD}")


def identity_policy() -> list[Obj]:
    """A MutatingAdmissionPolicy and its binding: each CertificateRequest created carries its creator's
    username and groups, as cert-manager's webhook writes them (without the uid and extra, which RBAC
    does not read)."""
    patch = (
        '[JSONPatch{op: "add", path: "/spec/username", value: request.userInfo.username}, '
        'JSONPatch{op: "add", path: "/spec/groups", '
        "value: request.userInfo.groups.map(g, string(g))}]"
    )
    api = "admissionregistration.k8s.io/v1"
    rule = {"apiGroups": ["cert-manager.io"], "apiVersions": ["*"], "operations": ["CREATE"],
            "resources": ["certificaterequests"]}  # fmt: skip
    return [
        {
            "apiVersion": api,
            "kind": "MutatingAdmissionPolicy",
            "metadata": {"name": IDENTITY_POLICY},
            "spec": {
                "matchConstraints": {"resourceRules": [rule]},
                "failurePolicy": "Fail",
                "reinvocationPolicy": "Never",
                "mutations": [{"patchType": "JSONPatch", "jsonPatch": {"expression": patch}}],
            },
        },
        {
            "apiVersion": api,
            "kind": "MutatingAdmissionPolicyBinding",
            "metadata": {"name": IDENTITY_POLICY},
            "spec": {"policyName": IDENTITY_POLICY},
        },
    ]


@dataclass(frozen=True)
class Running:
    process: procs.Background
    ready_port: int


def start(*, kubeconfig: pathlib.Path, state: pathlib.Path, binary: pathlib.Path | None = None) -> Running:
    """The controller started against the plane (a previous one of ``state`` stopped first). The CRDs
    (cert-manager's and approver-policy's) and the namespace ``cert-manager`` must exist."""
    binary = binary or build()
    procs.stop(BINARY, state=state)
    ready_port, webhook_port = procs.free_port(), procs.free_port()
    cmd = argv(binary, kubeconfig=kubeconfig, ready_port=ready_port, webhook_port=webhook_port)
    return Running(procs.start(BINARY, cmd, state=state, cwd=state), ready_port)


def ready(handle: Running) -> bool:
    """The process leads (holds the lease) and so decides."""
    bg = handle.process
    return bg.log.exists() and any(
        READY_LINE in line.lower() for line in bg.log.read_text(errors="replace").splitlines()
    )


def wait_ready(handle: Running, *, timeout: float) -> None:
    """Until ``ready``; an error naming the log when the process exits or the time is up."""
    deadline = time.monotonic() + timeout
    while not ready(handle):
        log = handle.process.log
        if not procs.alive(handle.process.pid):
            raise ApproverPolicyError(
                f"{BINARY} exited; last lines:\n{procs.tail(log.read_text(errors='replace'))}"
            )
        if time.monotonic() > deadline:
            raise ApproverPolicyError(f"{BINARY} did not lead within {timeout:.0f}s; see {log}")
        time.sleep(0.2)


def stop(handle: Running, *, state: pathlib.Path) -> None:
    procs.stop(BINARY, state=state)
    if handle.process.process is not None:
        handle.process.process.wait(timeout=30)


@contextlib.contextmanager
def running(
    *, kubectl: Kubectl, kubeconfig: pathlib.Path, state: pathlib.Path, timeout: float = 120
) -> Iterator[Running]:
    """CRD and the identity policy installed, the controller started and leading until the ``with``
    block ends; then the process stops and the identity policy goes."""
    binary = build()
    install_crds(kubectl, field_manager="approver-policy")
    kubectl("create", "namespace", NAMESPACE, check=False)
    kubectl("apply", "--server-side", "--force-conflicts", "--field-manager=approver-policy", "-f", "-",
            input=yaml.safe_dump_all(identity_policy()))  # fmt: skip
    handle: Running | None = None
    try:
        handle = start(kubeconfig=kubeconfig, state=state, binary=binary)
        wait_ready(handle, timeout=timeout)
        yield handle
    finally:
        if handle is not None:
            stop(handle, state=state)
        for obj in identity_policy():
            kubectl("delete", obj["kind"], obj["metadata"]["name"], "--ignore-not-found", check=False)
