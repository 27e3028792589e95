"""A stand-in for cert-manager's CA issuer, kept only where cert-manager does not run: ``make demo``
(hack/demo), and the scale runs of ``bench.scale`` and ``bench.chaos``. For each cert-manager ``Certificate`` whose Secret does not exist yet, it writes that
Secret (``kubernetes.io/tls``: ``tls.crt`` for the Certificate's ``dnsNames``, signed by the platform
CA, for its ``duration``; ``tls.key``; ``ca.crt``; the ``secretTemplate``'s labels and annotations),
as cert-manager's CA issuer does.

The runtime stand-in serves only such a Secret (``standins.runtime``), so an order is Ready only
after its Certificate, as the controller rendered it, was issued. A Secret that exists is never
touched (a renewal, or one written by hand, stands), and a Certificate is issued once per
process. The end-to-end tests run the real cert-manager instead, with the shipped issuer chain
(testkit/endpoint_pki.py): there Ready depends on cert-manager issuing the Certificate.

``secret_for`` is pure; ``start_issuer`` polls the Certificates on a thread;
``python -m standins.issuer --ca-cert CA.crt --ca-key CA.key [--kubeconfig K] [--period 1]``
runs it as a process (its first stdout line: ``issuer stand-in running``).
"""

from __future__ import annotations

import base64
import logging
import re
import threading
from dataclasses import dataclass
from typing import Any

from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.client.exceptions import ApiException

from standins.runtime.certs import make_server_pair

log = logging.getLogger(__name__)
GROUP, VERSION, PLURAL = "cert-manager.io", "v1", "certificates"
DEFAULT_HOURS = 2160.0  # cert-manager's default duration, 90 days
_DURATION = re.compile(r"(\d+(?:\.\d+)?)(h|m|s)")


def duration_hours(text: str | None) -> float:
    """A Go duration of hours, minutes and seconds (``2160h``, ``1h30m``) in hours; the default
    when absent or unreadable."""
    if not text:
        return DEFAULT_HOURS
    parts = _DURATION.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        return DEFAULT_HOURS
    return sum(float(n) / {"h": 1, "m": 60, "s": 3600}[u] for n, u in parts)


def secret_for(certificate: dict[str, Any], ca_cert_pem: bytes, ca_key_pem: bytes) -> dict[str, Any] | None:
    """The Secret cert-manager's CA issuer would write for ``certificate``; None when it names no
    Secret or no DNS name."""
    meta, spec = certificate.get("metadata") or {}, certificate.get("spec") or {}
    names = tuple(spec.get("dnsNames") or ())
    if not spec.get("secretName") or not names:
        return None
    template = spec.get("secretTemplate") or {}  # labels and annotations, as cert-manager copies them
    cert, key = make_server_pair(
        ca_cert_pem, ca_key_pem, names, days=duration_hours(spec.get("duration")) / 24
    )
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": spec["secretName"],
            "namespace": meta.get("namespace"),
            "labels": dict(template.get("labels") or {}),
            "annotations": {
                **(template.get("annotations") or {}),
                "cert-manager.io/certificate-name": meta.get("name", ""),
            },
        },
        "type": "kubernetes.io/tls",
        "data": {
            k: base64.b64encode(v).decode()
            for k, v in (("tls.crt", cert), ("tls.key", key), ("ca.crt", ca_cert_pem))
        },
    }


@dataclass
class RunningIssuer:
    thread: threading.Thread
    stop_event: threading.Event
    issued: set[tuple[str, str]]  # (namespace, secretName) written or found

    def stop(self) -> None:
        self.stop_event.set()
        self.thread.join(timeout=10)


def issue_once(api: Any, ca_cert_pem: bytes, ca_key_pem: bytes, done: set[tuple[str, str]]) -> int:
    """One pass over every Certificate; returns how many Secrets it wrote."""
    objects: Any = k8s.CustomObjectsApi(api)
    core: Any = k8s.CoreV1Api(api)
    wrote = 0
    for crt in objects.list_cluster_custom_object(GROUP, VERSION, PLURAL).get("items", []):
        ns, secret = crt["metadata"].get("namespace", ""), (crt.get("spec") or {}).get("secretName", "")
        if (ns, secret) in done:
            continue
        body = secret_for(crt, ca_cert_pem, ca_key_pem)
        if body is None:
            continue
        try:
            core.create_namespaced_secret(ns, body)
            wrote += 1
        except ApiException as e:
            if e.status != 409:  # 409: the Secret exists, and stands
                log.warning("Secret %s/%s not written: %s", ns, secret, e.reason)
                continue
        done.add((ns, secret))
    return wrote


def start_issuer(
    *, ca_cert_pem: bytes, ca_key_pem: bytes, kubeconfig: str, period: float = 1.0
) -> RunningIssuer:
    """Issue the Certificates every ``period`` seconds on a daemon thread until ``stop()``."""
    new_client: Any = k8s_config.new_client_from_config
    api = new_client(config_file=kubeconfig)
    stop, done = threading.Event(), set[tuple[str, str]]()

    def run() -> None:
        while not stop.is_set():
            try:
                issue_once(api, ca_cert_pem, ca_key_pem, done)
            except Exception as e:  # the API server restarting, cert-manager's CRDs not there yet
                log.info("issuer pass failed: %s", e)
            stop.wait(period)
        api.close()

    thread = threading.Thread(target=run, name="issuer-standin", daemon=True)
    thread.start()
    return RunningIssuer(thread, stop, done)
