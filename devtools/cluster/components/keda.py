"""KEDA v2 on the local plane: its operator, its metrics adapter (the external metrics API, served
through the API server's aggregation layer) and its admission webhooks, built pinned from the Go module
and run as plane daemons (pids and logs beside the plane's, devtools/cluster/daemons.py).

The version is pinned in devtools/cluster/versions.env (KEDA_VERSION). ``build`` compiles upstream's own
mains (``cmd/operator``, ``cmd/adapter``, ``cmd/webhooks`` of ``github.com/kedacore/keda/v2``) in the
module's own tree, so its go.mod replace directive (nexus-proto-annotations in v2.21.0) holds, which a
``go get`` into a scratch module would drop. The binaries take upstream's image names (KEDA's Makefile):
``keda``, ``keda-adapter``, ``keda-admission-webhooks``, under ``<cache>/keda-<version>/bin/``, static
(``CGO_ENABLED=0`` as upstream's default) with upstream's version ldflags.

    python -m devtools.cluster build-metrics     # builds Prometheus and KEDA, prints the bin directories
    python -m devtools.cluster up --metrics      # the plane with Prometheus and KEDA started

``start(plane)``:

- the CRDs of the module's ``config/crd/bases`` (ScaledObject, ScaledJob, TriggerAuthentication,
  ClusterTriggerAuthentication, CloudEventSource, ClusterCloudEventSource), skipped when they carry the
  pinned version's annotation; the namespace ``keda``;
- one certificate arrangement for all three (``<state>/pki/keda/``, ``ca.crt``/``tls.crt``/``tls.key``,
  the file names upstream's Secret ``kedaorg-certs`` mounts at ``/certs``): a CA of ours and one leaf,
  for serving and client auth, naming 127.0.0.1, the aggregation address and the Services' DNS names.
  The operator runs with ``--enable-cert-rotation=false`` (its own rotation writes a Secret and patches
  the APIService and webhooks, which we register ourselves) and ``--cert-dir`` on that directory; its
  gRPC metrics service (mutual TLS) loads the pair and trusts ``ca.crt``. The adapter serves the
  external metrics API with the same pair and, from the same ``--cert-dir``, dials the operator as a
  gRPC client with it. The APIService's ``caBundle`` is ``ca.crt``.
- the operator (``keda``), its health probe on 127.0.0.1, its metrics service on 127.0.0.1,
  leader election off (one process);
- the adapter (``keda-adapter``) listening on the aggregation address (devtools/cluster/netaddr.py: the
  API server refuses a loopback endpoint), authenticating the API server's front proxy through the
  ``extension-apiserver-authentication`` ConfigMap (kube-apiserver's ``--requestheader-*`` flags,
  devtools/cluster/components/kube.py) and delegating authorization to it;
- the APIService ``v1beta1.external.metrics.k8s.io`` on a selectorless Service ``keda/keda-metrics-apiserver``
  whose EndpointSlice holds the adapter's address: with ``--enable-aggregator-routing=true`` the API
  server dials that, not the ClusterIP;
- the admission webhooks (``keda-admission-webhooks``) on 127.0.0.1, registered from the module's
  ``config/webhooks/validation_webhooks.yaml`` with a ``url:`` client config (as the plane's
  cert-manager and LWS webhooks are) and ``ca.crt`` as caBundle.

All three run as KEDA's ServiceAccount ``keda/keda-operator`` under KEDA's shipped RBAC (``RBAC_FILES``
of the module's ``config/``: the operator's ClusterRole and Role, the adapter's auth-delegator and
extension-apiserver-authentication-reader bindings, the HPA controller's external-metrics reader), with a
kubeconfig holding a TokenRequest token (devtools/cluster/identity.py, valid a year, made anew at each
start), never the admin's.
``ready(plane)``: the operator's ``/readyz`` answers 200 and the APIService is Available. ``stop`` removes
the APIService and the webhook configuration first: an APIService nobody serves makes the namespace
controller fail every namespace deletion (discovery of its group fails), so it never outlives the adapter.
"""

from __future__ import annotations

import base64
import json
import os
import pathlib
import shutil
import urllib.error
import urllib.request
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any

import yaml

from devtools.cluster import daemons, pki
from devtools.cluster.components.base import Kubectl, Plane, run_kubectl
from devtools.cluster.components.kube import AGGREGATION_FLAGS
from devtools.cluster.config import Paths, VersionError, cache_root, log, pinned_version
from devtools.cluster.established import wait_established
from devtools.cluster.gomod import GoModuleError, build_in_module, download_module
from devtools.cluster.identity import service_account_kubeconfig
from devtools.cluster.netaddr import aggregation_ip

MODULE = "github.com/kedacore/keda/v2"
# binary -> package: the operator (ScaledObject -> HPA), the external metrics API server the HPA
# reads, and the admission webhooks that validate ScaledObjects.
BINARIES = {
    "keda": f"{MODULE}/cmd/operator",
    "keda-adapter": f"{MODULE}/cmd/adapter",
    "keda-admission-webhooks": f"{MODULE}/cmd/webhooks",
}
# The plane daemons (pid files and logs under the plane's state directory), in start order.
OPERATOR, ADAPTER, WEBHOOKS = "keda-operator", "keda-adapter", "keda-admission-webhooks"
DAEMONS = (OPERATOR, ADAPTER, WEBHOOKS)
NAMESPACE = "keda"
APISERVICE = "v1beta1.external.metrics.k8s.io"
SERVICE = "keda-metrics-apiserver"  # upstream's names (config/metrics-server), DNS names of the cert
OPERATOR_SERVICE = "keda-operator"
WEBHOOKS_SERVICE = "keda-admission-webhooks"
WEBHOOK_CONFIGURATION = "keda-admission"
CRD_NAMES = (
    "scaledobjects.keda.sh",
    "scaledjobs.keda.sh",
    "triggerauthentications.keda.sh",
    "clustertriggerauthentications.keda.sh",
    "cloudeventsources.eventing.keda.sh",
    "clustercloudeventsources.eventing.keda.sh",
)
VERSION_ANNOTATION = "inference.local/keda-version"
FIELD_MANAGER = "local-keda"
# What the three processes read from their environment (upstream's Deployments set them).
ENV = {"WATCH_NAMESPACE": "", "POD_NAMESPACE": NAMESPACE, "KEDA_CLUSTER_OBJECT_NAMESPACE": NAMESPACE}
SERVICE_ACCOUNT = "keda-operator"  # upstream runs all three processes as this ServiceAccount
# KEDA's shipped RBAC, applied as upstream's kustomizations list them (without their common labels).
RBAC_FILES = (
    "service_account/service_account.yaml",
    "rbac/role.yaml",
    "rbac/role_binding.yaml",
    "rbac/aggregate_cluster_roles.yaml",
    "metrics-server/role.yaml",
    "metrics-server/role_binding.yaml",
)
TOKEN_HOURS = 24 * 365  # the daemons outlive the session that started them; a new token at each start
# Marks that this plane registered the APIService: a plane brought up without KEDA removes it.
MARKER = "keda-apiservice"

Obj = dict[str, Any]


class KedaError(RuntimeError):
    """KEDA's module could not be fetched or built, or KEDA did not come up on the plane."""


def version() -> str:
    try:
        return pinned_version("KEDA_VERSION")
    except VersionError as e:
        raise KedaError(str(e)) from e


def bin_dir(*, pinned: str | None = None, env: Mapping[str, str] | None = None) -> pathlib.Path:
    """``<cache>/keda-<version>/bin``."""
    return cache_root(env) / f"keda-{pinned or version()}" / "bin"


def ldflags(pinned: str) -> str:
    """Upstream's version stamps (KEDA's Makefile GO_LDFLAGS)."""
    pkg = f"{MODULE}/version"
    return f"-s -w -X {pkg}.Version={pinned} -X {pkg}.GitCommit=module-proxy-{pinned}"


def build(*, pinned: str | None = None, env: Mapping[str, str] | None = None) -> pathlib.Path:
    """``<cache>/keda-<version>/bin`` with the three binaries, built if missing."""
    v = pinned or version()
    environ = dict(os.environ if env is None else env)
    out = bin_dir(pinned=v, env=environ)
    builds = [(pkg, out / name, ldflags(v)) for name, pkg in BINARIES.items()]
    try:
        build_in_module(MODULE, v, builds, cache=cache_root(environ), environ=environ)
    except GoModuleError as e:
        raise KedaError(str(e)) from e
    return out


def crds_dir(*, pinned: str | None = None, env: Mapping[str, str] | None = None) -> pathlib.Path:
    """``<cache>/keda-<version>/crds``: the module's ``config/crd/bases/*.yaml``, copied when missing."""
    v = pinned or version()
    target = cache_root(env) / f"keda-{v}" / "crds"
    if target.is_dir() and len(list(target.glob("*.yaml"))) >= len(CRD_NAMES):
        return target
    try:
        src = download_module(MODULE, v) / "config" / "crd" / "bases"
    except GoModuleError as e:
        raise KedaError(str(e)) from e
    tmp = target.with_name("crds.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    for f in sorted(src.glob("*.yaml")):
        shutil.copyfile(f, tmp / f.name)
    shutil.rmtree(target, ignore_errors=True)
    tmp.rename(target)
    return target


def rbac_manifests(*, pinned: str | None = None) -> str:
    """KEDA's ServiceAccount and RBAC (``RBAC_FILES`` of the module's ``config/``), one YAML stream."""
    try:
        src = download_module(MODULE, pinned or version()) / "config"
    except GoModuleError as e:
        raise KedaError(str(e)) from e
    return "\n---\n".join((src / f).read_text() for f in RBAC_FILES)


def webhook_manifest(*, pinned: str | None = None) -> str:
    """The module's ``config/webhooks/validation_webhooks.yaml``."""
    try:
        src = download_module(MODULE, pinned or version())
    except GoModuleError as e:
        raise KedaError(str(e)) from e
    return (src / "config" / "webhooks" / "validation_webhooks.yaml").read_text()


def install_crds(kubectl: Kubectl, *, timeout: float = 60) -> None:
    """KEDA's CRDs applied and Established; the apply (large CRDs) skipped when they carry the pinned
    version's annotation."""
    v = version()
    refs = [f"crd/{n}" for n in CRD_NAMES]
    found = kubectl("get", *refs, "-o", f"jsonpath={{.items[*].metadata.annotations.{_jsonpath_key()}}}",
                    check=False)  # fmt: skip
    if found.split() != [v] * len(CRD_NAMES):
        kubectl("apply", "--server-side", "--force-conflicts", f"--field-manager={FIELD_MANAGER}",
                "-f", str(crds_dir()))  # fmt: skip
        kubectl("annotate", "--overwrite", *refs, f"{VERSION_ANNOTATION}={v}")
    if not wait_established(kubectl, refs, timeout=timeout):
        raise KedaError(f"KEDA's CRDs are not Established after {timeout:.0f}s")


def _jsonpath_key() -> str:
    return VERSION_ANNOTATION.replace(".", "\\.")


def cert_dir(paths: Paths) -> pathlib.Path:
    return paths.pki / "keda"


def make_certs(paths: Paths, ip: str) -> pathlib.Path:
    """``ca.crt``, ``tls.crt``, ``tls.key`` in ``<state>/pki/keda`` (reused; the leaf is issued again
    when the aggregation address changed)."""
    d = cert_dir(paths)
    d.mkdir(parents=True, exist_ok=True)
    ca = pki.make_ca(d, "ca", "inference-local-keda-ca")
    recorded = d / "ip"
    if not recorded.exists() or recorded.read_text() != ip:
        for f in ("tls.crt", "tls.key"):
            (d / f).unlink(missing_ok=True)
    dns = [
        "localhost",
        *(f"{svc}.{NAMESPACE}.svc{suffix}" for svc in (SERVICE, OPERATOR_SERVICE, WEBHOOKS_SERVICE)
          for suffix in ("", ".cluster.local")),
    ]  # fmt: skip
    pki.issue(d, "tls", ca, cn="keda", dns=tuple(dns), ips=("127.0.0.1", ip), server=True, client=True)
    recorded.write_text(ip)
    return d


def kubeconfig(paths: Paths) -> pathlib.Path:
    """The kubeconfig of the ServiceAccount ``keda/keda-operator`` (a TokenRequest token), which all
    three processes use, under KEDA's shipped RBAC."""
    return paths.component_kubeconfig("keda")


def operator_argv(plane: Plane) -> list[str]:
    return [
        str(bin_dir() / "keda"),
        f"--kubeconfig={kubeconfig(plane.paths)}",
        f"--health-probe-bind-address=127.0.0.1:{plane.keda_health_port}",
        "--enable-prometheus-metrics=false",
        f"--metrics-service-bind-address=127.0.0.1:{plane.keda_grpc_port}",
        f"--cert-dir={cert_dir(plane.paths)}",
        "--enable-cert-rotation=false",
        f"--ca-dir={cert_dir(plane.paths)}",
        "--zap-log-level=info",
        "--zap-encoder=console",
        "--zap-time-encoding=rfc3339",
    ]


def adapter_argv(plane: Plane, ip: str) -> list[str]:
    kc, certs = kubeconfig(plane.paths), cert_dir(plane.paths)
    return [
        str(bin_dir() / "keda-adapter"),
        f"--kubeconfig={kc}",
        f"--lister-kubeconfig={kc}",
        f"--authentication-kubeconfig={kc}",
        f"--authorization-kubeconfig={kc}",
        f"--bind-address={ip}",
        f"--secure-port={plane.keda_adapter_port}",
        f"--tls-cert-file={certs / 'tls.crt'}",
        f"--tls-private-key-file={certs / 'tls.key'}",
        f"--cert-dir={certs}",
        f"--metrics-service-address=127.0.0.1:{plane.keda_grpc_port}",
        f"--port={plane.keda_adapter_metrics_port}",
        "--profiling=false",
        "--zap-log-level=info",
        "--zap-encoder=console",
    ]


def webhooks_argv(plane: Plane) -> list[str]:
    return [
        str(bin_dir() / "keda-admission-webhooks"),
        f"--kubeconfig={kubeconfig(plane.paths)}",
        f"--cert-dir={cert_dir(plane.paths)}",
        f"--port={plane.keda_webhooks_port}",
        f"--health-probe-bind-address=127.0.0.1:{plane.keda_webhooks_health_port}",
        "--metrics-bind-address=0",
        "--zap-log-level=info",
        "--zap-encoder=console",
    ]


def api_objects(*, ip: str, port: int, ca_bundle: bytes) -> list[Obj]:
    """The selectorless Service, its EndpointSlice (the adapter's address) and the APIService."""
    return [
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": SERVICE, "namespace": NAMESPACE},
            "spec": {"ports": [{"name": "https", "port": 443, "targetPort": port, "protocol": "TCP"}]},
        },
        {
            "apiVersion": "discovery.k8s.io/v1",
            "kind": "EndpointSlice",
            "metadata": {
                "name": f"{SERVICE}-local",
                "namespace": NAMESPACE,
                "labels": {
                    "kubernetes.io/service-name": SERVICE,
                    "endpointslice.kubernetes.io/managed-by": "inference-local-plane",
                },
            },
            "addressType": "IPv4",
            "ports": [{"name": "https", "port": port, "protocol": "TCP"}],
            "endpoints": [{"addresses": [ip], "conditions": {"ready": True}}],
        },
        {
            "apiVersion": "apiregistration.k8s.io/v1",
            "kind": "APIService",
            "metadata": {"name": APISERVICE},
            "spec": {
                "service": {"name": SERVICE, "namespace": NAMESPACE, "port": 443},
                "group": "external.metrics.k8s.io",
                "version": "v1beta1",
                "caBundle": base64.b64encode(ca_bundle).decode(),
                "groupPriorityMinimum": 100,
                "versionPriority": 100,
            },
        },
    ]


def webhook_configuration(manifest: str, *, port: int, ca_bundle: bytes) -> Obj:
    """Upstream's ValidatingWebhookConfiguration with each ``service:`` client config turned into a
    ``url:`` on 127.0.0.1 (the path kept) and our CA as caBundle."""
    conf: Obj = yaml.safe_load(manifest)
    for hook in conf["webhooks"]:
        path = hook["clientConfig"]["service"].get("path", "/")
        hook["clientConfig"] = {
            "url": f"https://127.0.0.1:{port}{path}",
            "caBundle": base64.b64encode(ca_bundle).decode(),
        }
    return conf


def check_aggregation(paths: Paths) -> None:
    """KedaError when the running kube-apiserver lacks the aggregation flags (a plane started before
    they were added: ``python -m devtools.cluster down`` and ``up`` again)."""
    found = daemons.pid(paths, "kube-apiserver")
    if found is None:
        raise KedaError("kube-apiserver is not running: `python -m devtools.cluster up` first")
    cmdline = pathlib.Path(f"/proc/{found}/cmdline").read_bytes().decode(errors="replace").split("\0")
    missing = [f for f in AGGREGATION_FLAGS if not any(arg.startswith(f) for arg in cmdline)]
    if missing:
        raise KedaError(
            f"the running kube-apiserver has no {', '.join(missing)}: it was started before the aggregation "
            "layer was configured; restart the plane (python -m devtools.cluster down && ... up)"
        )


def kubectl_of(plane: Plane) -> Kubectl:
    return partial(run_kubectl, plane.bin_dir / "kubectl", plane.paths.kubeconfig)


def start(plane: Plane) -> None:
    """CRDs, namespace, certificates, the three daemons (each unless it runs) and the registrations."""
    paths = plane.paths
    check_aggregation(paths)
    kubectl = kubectl_of(plane)
    ip = aggregation_ip()
    kubectl("apply", "--server-side", f"--field-manager={FIELD_MANAGER}", "-f", "-",
            input=yaml.safe_dump({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}))  # fmt: skip
    install_crds(kubectl)
    kubectl("apply", "--server-side", "--force-conflicts", f"--field-manager={FIELD_MANAGER}", "-f", "-",
            input=rbac_manifests())  # fmt: skip
    if not running(paths):  # a running KEDA keeps the token it started with
        service_account_kubeconfig(
            kubectl=plane.bin_dir / "kubectl",
            admin_kubeconfig=paths.kubeconfig,
            namespace=NAMESPACE,
            name=SERVICE_ACCOUNT,
            out=kubeconfig(paths),
            hours=TOKEN_HOURS,
        )
    certs = make_certs(paths, ip)
    ca_bundle = (certs / "ca.crt").read_bytes()
    if daemons.pid(paths, ADAPTER) is None:
        # A registration left by a plane that was killed may still say Available: start from none, so
        # that ``ready`` sees the API server's verdict on this adapter.
        kubectl("delete", "apiservice", APISERVICE, "--ignore-not-found", check=False)
    daemons.start(paths, OPERATOR, operator_argv(plane), ports=(plane.keda_health_port, plane.keda_grpc_port),
                  env=ENV)  # fmt: skip
    daemons.start(paths, ADAPTER, adapter_argv(plane, ip), ports=(plane.keda_adapter_metrics_port,), env=ENV)
    daemons.start(paths, WEBHOOKS, webhooks_argv(plane),
                  ports=(plane.keda_webhooks_port, plane.keda_webhooks_health_port), env=ENV)  # fmt: skip
    docs = [
        *api_objects(ip=ip, port=plane.keda_adapter_port, ca_bundle=ca_bundle),
        webhook_configuration(webhook_manifest(), port=plane.keda_webhooks_port, ca_bundle=ca_bundle),
    ]
    kubectl("apply", "--server-side", "--force-conflicts", f"--field-manager={FIELD_MANAGER}", "-f", "-",
            input=yaml.safe_dump_all(docs))  # fmt: skip
    (paths.root / MARKER).write_text(ip)
    log(f"KEDA: external metrics API at https://{ip}:{plane.keda_adapter_port} (APIService {APISERVICE})")


def _http_ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            return bool(r.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def apiservice_available(kubectl: Kubectl) -> bool:
    out = kubectl("get", "apiservice", APISERVICE, "-o", "json", "--ignore-not-found", check=False).strip()
    if not out:
        return False
    conditions = json.loads(out).get("status", {}).get("conditions") or []
    return any(c.get("type") == "Available" and c.get("status") == "True" for c in conditions)


def ready(plane: Plane) -> bool:
    """The operator answers ``/readyz`` and the APIService is Available (the API server reached the
    adapter through the aggregation layer)."""
    if not _http_ok(f"http://127.0.0.1:{plane.keda_health_port}/readyz"):
        return False
    return apiservice_available(kubectl_of(plane))


def unregister(kubectl: Kubectl, paths: Paths) -> None:
    """The APIService and the webhook configuration removed (the namespace controller must not see an
    APIService nobody serves)."""
    kubectl("delete", "apiservice", APISERVICE, "--ignore-not-found", check=False)
    kubectl(
        "delete", "validatingwebhookconfiguration", WEBHOOK_CONFIGURATION, "--ignore-not-found", check=False
    )
    (paths.root / MARKER).unlink(missing_ok=True)


def stop(plane: Plane) -> None:
    """Unregister (while the API server runs), then stop the three daemons (at once: each takes 1-3 s
    to exit on SIGTERM)."""
    if (plane.paths.root / MARKER).exists() and daemons.pid(plane.paths, "kube-apiserver") is not None:
        unregister(kubectl_of(plane), plane.paths)
    with ThreadPoolExecutor(max_workers=len(DAEMONS)) as pool:
        list(pool.map(partial(daemons.stop, plane.paths), DAEMONS))


def running(paths: Paths) -> bool:
    return all(daemons.pid(paths, n) is not None for n in DAEMONS)


def leftover(paths: Paths) -> bool:
    """The plane registered the APIService but the adapter does not run (it crashed, or the plane was
    stopped with it and brought up without it)."""
    return (paths.root / MARKER).exists() and daemons.pid(paths, ADAPTER) is None
