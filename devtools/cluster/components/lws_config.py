"""LeaderWorkerSet's configuration made local, pure: its manager's Configuration file, its webhook
configurations pointed at a loopback URL, and the version its installed CRDs carry.

One change to upstream's webhook configurations: the pod webhooks get an ``objectSelector`` on the
``leaderworkerset.sigs.k8s.io/name`` label. LWS's pod webhook returns at once for pods without it, so the
behaviour is the same, but a stopped LWS process (failurePolicy Fail) cannot block every pod creation in
the cluster.
"""

from __future__ import annotations

import base64
import copy
import json
import pathlib
from collections.abc import Mapping, Sequence
from typing import Any

import yaml

from devtools.cluster.components.base import Kubectl

SET_NAME_LABEL = "leaderworkerset.sigs.k8s.io/name"
CONFIG_API_VERSION = "config.lws.x-k8s.io/v1alpha1"
CRD_NAMES = ("leaderworkersets.leaderworkerset.x-k8s.io", "disaggregatedsets.disaggregatedset.x-k8s.io")

Obj = dict[str, Any]


def crd_refs() -> list[str]:
    """``crd/<name>`` of LWS's CRDs, for kubectl."""
    return [f"crd/{n}" for n in CRD_NAMES]


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
