"""Registering the webhook with a local API server, which reaches it at ``https://127.0.0.1:<port>``.

In a cluster, cert-manager issues the serving certificate and injects the CA into the webhook
configurations of ``deploy/webhook/webhooks.yaml``. Locally this module does both: it makes a CA
and a serving certificate (``devtools.local_pki``) and registers the same configurations with a
``url`` client config and the CA bundle. Used by ``make demo`` and the integration fixtures.

    python -m standins.local_webhook register --kubeconfig .cluster/kubeconfig --port 9443 --dir .cluster/webhook
    python -m webhook --cert-file .cluster/webhook/tls.crt --key-file .cluster/webhook/tls.key \\
        --host 127.0.0.1 --port 9443
    python -m standins.local_webhook unregister --kubeconfig .cluster/kubeconfig
"""

from __future__ import annotations

import argparse
import base64
import copy
import datetime as dt
import pathlib
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import yaml
from kubernetes import client as k8s
from kubernetes import config as k8s_config

from devtools.local_pki import ServingPki, make_serving_pki

ROOT = pathlib.Path(__file__).resolve().parents[1]
WEBHOOKS_YAML = ROOT / "deploy" / "webhook" / "webhooks.yaml"
DEFAULT_NAME = "inference-webhook"


def configurations(
    *,
    base_url: str,
    ca_bundle: bytes,
    name: str = DEFAULT_NAME,
    namespace_selector: Mapping[str, Any] | None = None,
    match_conditions: Sequence[Mapping[str, str]] = (),
    cluster_scoped_match_conditions: Sequence[Mapping[str, str]] = (),
) -> list[dict[str, Any]]:
    """The Mutating- and ValidatingWebhookConfiguration of deploy/, pointed at ``base_url``.

    ``namespace_selector`` narrows the namespaced webhooks (orders); ``cluster_scoped_match_conditions``
    narrows the class and recipe webhooks (a namespace selector does not apply to cluster-scoped
    objects), so a test can register its own copy without touching other tests' objects.
    """
    docs = [d for d in yaml.safe_load_all(WEBHOOKS_YAML.read_text()) if d]
    out = []
    for doc in docs:
        doc = copy.deepcopy(doc)
        doc["metadata"] = {"name": name, "labels": {"app.kubernetes.io/name": "inference-webhook-local"}}
        for hook in doc["webhooks"]:
            path = hook["clientConfig"]["service"]["path"]
            hook["clientConfig"] = {
                "url": base_url.rstrip("/") + path,
                "caBundle": base64.b64encode(ca_bundle).decode(),
            }
            namespaced = hook["rules"][0].get("scope") == "Namespaced"
            if namespaced and namespace_selector is not None:
                hook["namespaceSelector"] = dict(namespace_selector)
            conditions = match_conditions if namespaced else cluster_scoped_match_conditions
            if conditions:
                hook["matchConditions"] = [dict(c) for c in conditions]
        out.append(doc)
    return out


def register(api: k8s.ApiClient, configs: Sequence[Mapping[str, Any]]) -> None:
    """Create or replace each configuration."""
    admission: Any = k8s.AdmissionregistrationV1Api(api)  # dict bodies: the typed models add nothing here
    for config in configs:
        name = config["metadata"]["name"]
        mutating = config["kind"] == "MutatingWebhookConfiguration"
        read = (
            admission.read_mutating_webhook_configuration
            if mutating
            else admission.read_validating_webhook_configuration
        )
        create = (
            admission.create_mutating_webhook_configuration
            if mutating
            else admission.create_validating_webhook_configuration
        )
        replace = (
            admission.replace_mutating_webhook_configuration
            if mutating
            else admission.replace_validating_webhook_configuration
        )
        try:
            current = read(name)
        except k8s.ApiException as e:
            if e.status != 404:
                raise
            create(dict(config))
            continue
        body = dict(config)
        body["metadata"] = {**body["metadata"], "resourceVersion": current.metadata.resource_version}
        replace(name, body)


def unregister(api: k8s.ApiClient, name: str = DEFAULT_NAME) -> None:
    """Delete both configurations named ``name``; absent ones are fine."""
    admission = k8s.AdmissionregistrationV1Api(api)
    for delete in (
        admission.delete_mutating_webhook_configuration,
        admission.delete_validating_webhook_configuration,
    ):
        try:
            delete(name)
        except k8s.ApiException as e:
            if e.status != 404:
                raise


def ensure_pki(directory: pathlib.Path) -> ServingPki:
    """The PKI in ``directory``, made on first use."""
    pki = ServingPki(directory / "ca.crt", directory / "ca.key", directory / "tls.crt", directory / "tls.key")
    if all(p.exists() for p in (pki.ca_file, pki.ca_key_file, pki.cert_file, pki.key_file)):
        return pki
    return make_serving_pki(directory, now=dt.datetime.now(dt.UTC))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m standins.local_webhook", description=__doc__.split("\n")[0]
    )
    parser.add_argument("action", choices=["register", "unregister"])
    parser.add_argument("--kubeconfig", default=str(ROOT / ".cluster" / "kubeconfig"))
    parser.add_argument("--port", type=int, default=9443)
    parser.add_argument("--dir", default=str(ROOT / ".cluster" / "webhook"), help="where the PKI files live")
    parser.add_argument("--name", default=DEFAULT_NAME)
    args = parser.parse_args(argv)
    api: k8s.ApiClient = k8s_config.new_client_from_config(config_file=args.kubeconfig)  # type: ignore[no-untyped-call]
    try:
        if args.action == "unregister":
            unregister(api, args.name)
            return 0
        pki = ensure_pki(pathlib.Path(args.dir))
        register(
            api,
            configurations(
                base_url=f"https://127.0.0.1:{args.port}", ca_bundle=pki.ca_bundle(), name=args.name
            ),
        )
        print(f"registered {args.name} -> https://127.0.0.1:{args.port}; serve it with:")
        print(
            f"  python -m webhook --cert-file {pki.cert_file} --key-file {pki.key_file} --host 127.0.0.1 --port {args.port}"
        )
        return 0
    finally:
        api.close()  # type: ignore[no-untyped-call]


if __name__ == "__main__":
    sys.exit(main())
