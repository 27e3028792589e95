"""Kubernetes itself (``k8s.io/kubernetes``, built by build.sh with kubectl): kube-apiserver,
kube-controller-manager and kube-scheduler, each with its client certificate and kubeconfig from
devtools/cluster/credentials.py.

The API server is ready when ``/readyz`` answers 200 to the admin's certificate; the controller-manager
(every controller but nodeipam, tuned by devtools/cluster/tuning.py) and the scheduler once they run.
"""

from __future__ import annotations

import ssl
import urllib.error
import urllib.request
from dataclasses import dataclass

from devtools.cluster.components.base import Daemon, Plane
from devtools.cluster.config import SERVICE_CIDR, Paths
from devtools.cluster.credentials import FRONT_PROXY_CA, FRONT_PROXY_CLIENT

# The flags that make kube-apiserver an aggregator: it proxies an APIService's group (KEDA's
# external.metrics.k8s.io) to the extension server with the front-proxy client certificate and the
# caller's identity in X-Remote-* headers, and (aggregator routing) dials the Service's EndpointSlice
# address rather than its ClusterIP, which nothing routes here.
AGGREGATION_FLAGS = ("--proxy-client-cert-file", "--enable-aggregator-routing=true")


def admin_ssl(paths: Paths) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=str(paths.pki / "ca.crt"))
    ctx.load_cert_chain(str(paths.pki / "admin.crt"), str(paths.pki / "admin.key"))
    return ctx


def api_ready(paths: Paths, server_url: str, timeout: float = 2.0) -> bool:
    try:
        with urllib.request.urlopen(f"{server_url}/readyz", context=admin_ssl(paths), timeout=timeout) as r:
            return bool(r.status == 200)
    except (urllib.error.URLError, OSError, ssl.SSLError):
        return False


@dataclass(frozen=True)
class ApiServer(Daemon):
    def ports(self, plane: Plane) -> tuple[int, ...]:
        return (plane.api_port,)

    def argv(self, plane: Plane) -> list[str]:
        pk = plane.paths.pki
        return [
            str(plane.bin_dir / self.name),
            f"--etcd-servers=http://127.0.0.1:{plane.etcd_port}",
            "--bind-address=127.0.0.1",
            f"--secure-port={plane.api_port}",
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
            *aggregation_flags(plane),
            "--profiling=false",
            "--v=1",
        ]

    def ready(self, plane: Plane) -> bool:
        return api_ready(plane.paths, plane.server_url)


def aggregation_flags(plane: Plane) -> list[str]:
    """The aggregation layer (front proxy) of kube-apiserver, as kubeadm sets it."""
    pk = plane.paths.pki
    return [
        f"--requestheader-client-ca-file={pk / (FRONT_PROXY_CA + '.crt')}",
        f"--requestheader-allowed-names={FRONT_PROXY_CLIENT}",
        "--requestheader-username-headers=X-Remote-User",
        "--requestheader-group-headers=X-Remote-Group",
        "--requestheader-extra-headers-prefix=X-Remote-Extra-",
        f"--proxy-client-cert-file={pk / (FRONT_PROXY_CLIENT + '.crt')}",
        f"--proxy-client-key-file={pk / (FRONT_PROXY_CLIENT + '.key')}",
        "--enable-aggregator-routing=true",
    ]


def _client_flags(plane: Plane, name: str, port: int) -> list[str]:
    kc = plane.paths.component_kubeconfig(name)
    return [
        f"--kubeconfig={kc}",
        f"--authentication-kubeconfig={kc}",
        f"--authorization-kubeconfig={kc}",
        "--bind-address=127.0.0.1",
        f"--secure-port={port}",
        "--leader-elect=false",
    ]


@dataclass(frozen=True)
class ControllerManager(Daemon):
    def ports(self, plane: Plane) -> tuple[int, ...]:
        return (plane.kcm_port,)

    def argv(self, plane: Plane) -> list[str]:
        pk = plane.paths.pki
        return [
            str(plane.bin_dir / self.name),
            *_client_flags(plane, self.name, plane.kcm_port),
            "--use-service-account-credentials=true",
            f"--service-account-private-key-file={pk / 'sa.key'}",
            f"--root-ca-file={pk / 'ca.crt'}",
            f"--cluster-signing-cert-file={pk / 'ca.crt'}",
            f"--cluster-signing-key-file={pk / 'ca.key'}",
            f"--service-cluster-ip-range={SERVICE_CIDR}",
            "--controllers=*,-nodeipam",
            *plane.tuning.controller_manager,
            "--v=1",
        ]


@dataclass(frozen=True)
class Scheduler(Daemon):
    def ports(self, plane: Plane) -> tuple[int, ...]:
        return (plane.scheduler_port,)

    def argv(self, plane: Plane) -> list[str]:
        return [
            str(plane.bin_dir / self.name),
            *_client_flags(plane, self.name, plane.scheduler_port),
            *plane.tuning.scheduler,
            "--v=1",
        ]


APISERVER = ApiServer("kube-apiserver", "KUBE_VERSION", ready_timeout=90)
CONTROLLER_MANAGER = ControllerManager("kube-controller-manager", "KUBE_VERSION")
SCHEDULER = Scheduler("kube-scheduler", "KUBE_VERSION")
