"""Kubeconfigs for the product's own ServiceAccounts, so the controller and the webhook run locally
under the shipped RBAC exactly as in a cluster, never with the admin kubeconfig.

``service_account_kubeconfig`` asks the API server for a token of the ServiceAccount (TokenRequest,
what ``kubectl create token`` does) and writes a kubeconfig holding it, the server and the CA.
"""

from __future__ import annotations

import pathlib
import subprocess

import yaml


def service_account_kubeconfig(
    *,
    kubectl: pathlib.Path,
    admin_kubeconfig: pathlib.Path,
    namespace: str,
    name: str,
    out: pathlib.Path,
    hours: int = 48,
) -> pathlib.Path:
    """Write a kubeconfig that authenticates as ``system:serviceaccount:<namespace>:<name>``."""
    token = subprocess.run(
        [
            str(kubectl),
            f"--kubeconfig={admin_kubeconfig}",
            "create",
            "token",
            name,
            "-n",
            namespace,
            f"--duration={hours}h",
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    admin = yaml.safe_load(admin_kubeconfig.read_text())
    cluster = admin["clusters"][0]["cluster"]
    user = f"system:serviceaccount:{namespace}:{name}"
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "local", "cluster": cluster}],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [{"name": user, "context": {"cluster": "local", "user": user, "namespace": namespace}}],
        "current-context": user,
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(yaml.safe_dump(config))
    out.chmod(0o600)
    return out
