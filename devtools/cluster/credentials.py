"""The plane's own credentials: its CA, the API server's serving pair, a client certificate and a
kubeconfig for the admin and for each component, the service-account signing keys, and the
aggregation layer's front-proxy CA with the API server's proxy client certificate (the identity it
presents to an extension API server such as KEDA's metrics adapter, which trusts the CA through the
``extension-apiserver-authentication`` ConfigMap the API server publishes). Written once into
``<state>/pki`` and reused (devtools/cluster/pki.py keeps what is present)."""

from __future__ import annotations

import pathlib

import yaml

from devtools.cluster import pki
from devtools.cluster.config import Paths

# The components that talk to the API server with a kubeconfig of their own.
CLIENTS = ("kube-controller-manager", "kube-scheduler", "kwok")
# The aggregation layer: the CA of the front proxy's client certificate (kube-apiserver
# --requestheader-client-ca-file) and that certificate's common name (--requestheader-allowed-names).
FRONT_PROXY_CA = "front-proxy-ca"
FRONT_PROXY_CLIENT = "front-proxy-client"
APISERVER_NAMES = (
    "localhost",
    "kubernetes",
    "kubernetes.default",
    "kubernetes.default.svc",
    "kubernetes.default.svc.cluster.local",
)


def kubeconfig(paths: Paths, path: pathlib.Path, user: str, *, server: str) -> None:
    """A kubeconfig for ``user``'s client certificate in ``paths.pki``."""
    cfg = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "local",
                "cluster": {"server": server, "certificate-authority": str(paths.pki / "ca.crt")},
            }
        ],
        "users": [
            {
                "name": user,
                "user": {
                    "client-certificate": str(paths.pki / f"{user}.crt"),
                    "client-key": str(paths.pki / f"{user}.key"),
                },
            }
        ],
        "contexts": [{"name": "local", "context": {"cluster": "local", "user": user}}],
        "current-context": "local",
    }
    path.write_text(yaml.safe_dump(cfg))
    path.chmod(0o600)


def make_pki(paths: Paths, *, server: str) -> None:
    d = paths.pki
    d.mkdir(parents=True, exist_ok=True)
    ca = pki.make_ca(d, "ca", "inference-local-ca")
    pki.issue(
        d,
        "apiserver",
        ca,
        cn="kube-apiserver",
        server=True,
        dns=APISERVER_NAMES,
        ips=("127.0.0.1", "10.96.0.1"),
    )
    pki.issue(d, "admin", ca, cn="kubernetes-admin", org="system:masters", client=True)
    pki.issue(d, "kube-controller-manager", ca, cn="system:kube-controller-manager", client=True)
    pki.issue(d, "kube-scheduler", ca, cn="system:kube-scheduler", client=True)
    pki.issue(d, "kwok", ca, cn="kwok-controller", org="system:masters", client=True)
    pki.issue(d, "apiserver-client", ca, cn="kube-apiserver-client", org="system:masters", client=True)
    front_proxy = pki.make_ca(d, FRONT_PROXY_CA, "inference-local-front-proxy-ca")
    pki.issue(d, FRONT_PROXY_CLIENT, front_proxy, cn=FRONT_PROXY_CLIENT, client=True)
    pki.service_account_keys(d)
    kubeconfig(paths, paths.kubeconfig, "admin", server=server)
    for name in CLIENTS:
        kubeconfig(paths, paths.component_kubeconfig(name), name, server=server)
