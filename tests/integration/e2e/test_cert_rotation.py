"""Issue 13: the endpoint certificate rotates and the probe keeps passing, with no restart.

The runtime (vLLM with ``--enable-ssl-refresh``, here the runtime stand-in) serves the order's
``<order>-tls`` Secret and picks up a renewed one on new connections. The controller's probe
verifies each against the platform CA (module setting ``platformCAFile``).

- The renewal is cert-manager's own: the platform's cert-manager (built from its Go module) issues
  the order's Certificate from the shipped ClusterIssuer ``inference-endpoints``
  (deploy/base/cert-manager/endpoints-pki.yaml, testkit/endpoint_pki.py), and renews it the way
  ``cmctl renew`` does. Ready stays True throughout (sampled on a thread, and its
  ``lastTransitionTime`` never moves), the probe is served the new serial, and the workload is not
  touched: same pod, no restart, the Deployment's generation and template unchanged. Both
  certificates carry the rendered Certificate's ``duration`` and ``renewBefore`` (the module
  settings' defaults: 90 days, renewed when 30 are left), as cert-manager reports them.
- The negative control writes the Secret by hand with cert-manager paused (``platform.issuer.paused()``:
  its controller stopped, so nothing issues or re-issues behind the test's back): before any Secret the runtime presents no
  certificate and the order is not Ready; a platform-signed one makes it Ready; a certificate from
  another CA fails the probe with a verification error, and a platform-signed one brings the
  order back.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import threading
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import pytest
from cryptography import x509
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from kubernetes import client as k8s

from standins.runtime import make_ca, make_server_pair
from standins.runtime.endpoint_tls import leaf_serial, serial_hex
from testkit.platform import Obj, Platform, hf
from tests.integration.cert_manager_fixture import renew
from tests.integration.conftest import wait_for

pytestmark = pytest.mark.cluster

SMALL = "Qwen/Qwen2.5-0.5B-Instruct"
GROUP, VERSION, PLURAL = "ai.deckhouse.io", "v1alpha1", "inferenceservices"


# -- what is observed --------------------------------------------------------------------------


@dataclass(frozen=True)
class Issued:
    serial: str
    public_key: bytes
    not_after: dt.datetime
    lifetime: dt.timedelta


def issued(platform: Platform, ns: str, secret: str) -> Issued | None:
    """The leaf in ``<order>-tls``; None while there is none."""
    obj = platform.get("secret", secret, ns)
    raw = ((obj or {}).get("data") or {}).get("tls.crt")
    if not raw:
        return None
    cert = x509.load_pem_x509_certificate(base64.b64decode(raw))
    return Issued(
        serial_hex(cert),
        cert.public_key().public_bytes(Encoding.DER, PublicFormat.SubjectPublicKeyInfo),
        cert.not_valid_after_utc,
        cert.not_valid_after_utc - cert.not_valid_before_utc,
    )


def renew_before(platform: Platform, ns: str, certificate: str, leaf: Issued) -> dt.timedelta | None:
    """notAfter - renewalTime of the Certificate once its status describes ``leaf``; None before."""
    status = (platform.get("certificate", certificate, ns) or {}).get("status") or {}
    if not status.get("renewalTime") or not status.get("notAfter"):
        return None
    not_after = dt.datetime.fromisoformat(status["notAfter"])
    if not_after != leaf.not_after:
        return None
    return not_after - dt.datetime.fromisoformat(status["renewalTime"])


def wait_renew_before(platform: Platform, ns: str, certificate: str, leaf: Issued) -> dt.timedelta | None:
    return wait_for(
        lambda: renew_before(platform, ns, certificate, leaf),
        lambda r: r is not None,
        timeout=30,
        message=f"Certificate {ns}/{certificate} status for serial {leaf.serial}",
    )


def wait_probe_served(platform: Platform, host: str, serial: str, *, count: int = 1) -> list[dict[str, Any]]:
    """Until ``count`` probes of ``host`` were answered 200 over a connection presenting ``serial``:
    the probe's TLS handshake verified that certificate against the platform CA."""

    def served() -> list[dict[str, Any]]:
        return [
            r
            for r in platform.runtime.requests()
            if r["host"] == host
            and r["serial"] == serial
            and r["status"] == 200
            and r["path"] == "/v1/models"
        ]

    return wait_for(
        served, lambda rs: len(rs) >= count, timeout=60, message=f"{count} probe(s) of {host} served {serial}"
    )


@dataclass(frozen=True)
class Workload:
    pods: tuple[tuple[str, int], ...]  # (uid, restarts of its containers)
    generation: int
    template: str  # the Deployment's pod template, canonical JSON


def workload(platform: Platform, ns: str, name: str) -> Workload:
    dep = platform.get("deployment", name, ns)
    assert dep is not None
    selector = f"ai.deckhouse.io/inference-service={name}"
    pods = json.loads(platform.kubectl("get", "pods", "-n", ns, "-l", selector, "-o", "json").stdout)["items"]
    running = []
    for pod in pods:
        statuses = pod.get("status", {}).get("containerStatuses") or []
        assert [s["name"] for s in statuses] == ["runtime"], statuses
        running.append((pod["metadata"]["uid"], sum(int(s.get("restartCount", 0)) for s in statuses)))
    return Workload(
        tuple(sorted(running)),
        int(dep["metadata"]["generation"]),
        json.dumps(dep["spec"]["template"], sort_keys=True),
    )


class ReadySampler:
    """Reads the order's Ready condition every ``period`` seconds on a thread, until the block ends."""

    def __init__(self, api: k8s.ApiClient, ns: str, name: str, *, period: float = 0.2) -> None:
        self._objects: Any = k8s.CustomObjectsApi(api)
        self._ns, self._name, self._period = ns, name, period
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="ready-sampler", daemon=True)
        self.samples: list[Obj] = []
        self.errors: list[str] = []

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                order = self._objects.get_namespaced_custom_object(
                    GROUP, VERSION, self._ns, PLURAL, self._name
                )
            except k8s.ApiException as e:
                self.errors.append(str(e))
            else:
                conds = (order.get("status") or {}).get("conditions") or []
                self.samples += [
                    dict(c, phase=order["status"].get("phase")) for c in conds if c["type"] == "Ready"
                ]
            self._stop.wait(self._period)

    def __enter__(self) -> ReadySampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)


def endpoint_host(platform: Platform, ns: str, name: str) -> str:
    url = platform.order(ns, name)["status"]["endpoint"]["url"]
    return str(urlsplit(url).hostname)


def write_tls_secret(platform: Platform, ns: str, name: str, cert: bytes, key: bytes) -> None:
    """``<order>-tls`` as cert-manager writes it, by hand."""
    platform.apply(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {
                "name": f"{name}-tls",
                "namespace": ns,
                "labels": {"ai.deckhouse.io/inference-service": name},
            },
            "type": "kubernetes.io/tls",
            "stringData": {"tls.crt": cert.decode(), "tls.key": key.decode()},
        }
    )


# -- the tests -----------------------------------------------------------------------------------


def test_a_renewal_by_cert_manager_is_served_to_the_probe_while_ready_holds_and_nothing_restarts(
    platform: Platform, ns: str
) -> None:
    name = "rotated"
    platform.create_order(ns, name, hf(SMALL))
    platform.wait_phase(ns, name, "Ready", timeout=120)
    host = endpoint_host(platform, ns, name)
    first = wait_for(
        lambda: issued(platform, ns, f"{name}-tls"),
        bool,
        timeout=60,
        message="cert-manager to issue the endpoint certificate",
    )
    assert first is not None
    leaf = x509.load_pem_x509_certificate(
        base64.b64decode((platform.get("secret", f"{name}-tls", ns) or {})["data"]["tls.crt"])
    )
    leaf.verify_directly_issued_by(x509.load_pem_x509_certificate(platform.ca_file.read_bytes()))
    sans = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert host in sans.get_values_for_type(x509.DNSName)
    wait_probe_served(platform, host, first.serial)
    # The Certificate's duration and renewBefore (module settings, 2160h and 720h by default) are
    # honoured: 90 days, renewed when a third is left.
    assert first.lifetime == dt.timedelta(hours=2160)
    assert wait_renew_before(platform, ns, f"{name}-tls", first) == dt.timedelta(hours=720)

    ready_before = platform.condition(platform.order(ns, name), "Ready")
    assert ready_before["status"] == "True", ready_before
    before = workload(platform, ns, name)
    assert before.pods, "no runtime pod to watch"
    mark = len(platform.runtime.handshakes())
    with ReadySampler(platform.api, ns, name) as sampler:
        renew(platform.kubectl, ns, f"{name}-tls")
        second = wait_for(
            lambda: issued(platform, ns, f"{name}-tls"),
            lambda i: i is not None and i != first,
            timeout=60,
            message="cert-manager to renew the endpoint certificate",
        )
        assert second is not None
        # Three probes on the renewed certificate: a failure around the switch would have shown.
        wait_probe_served(platform, host, second.serial, count=3)
    renewed_renew_before = wait_renew_before(platform, ns, f"{name}-tls", second)
    after = workload(platform, ns, name)
    ready_after = platform.condition(platform.order(ns, name), "Ready")

    assert (second.serial != first.serial, second.public_key != first.public_key) == (True, True)
    assert (second.lifetime, renewed_renew_before) == (dt.timedelta(hours=2160), dt.timedelta(hours=720))
    handshakes = [h for h in platform.runtime.handshakes()[mark:] if h["host"] == host]
    assert handshakes and all(h["ok"] for h in handshakes), handshakes
    assert {h["serial"] for h in handshakes} <= {first.serial, second.serial}
    assert handshakes[-1]["serial"] == second.serial
    assert sampler.errors == [] and len(sampler.samples) >= 5, (sampler.errors, len(sampler.samples))
    unsteady = [
        s
        for s in sampler.samples
        if (s["status"], s["reason"], s["lastTransitionTime"], s["phase"])
        != ("True", "Serving", ready_before["lastTransitionTime"], "Ready")
        or "failed" in s["message"]
    ]
    assert unsteady == [], unsteady
    assert ready_after["lastTransitionTime"] == ready_before["lastTransitionTime"]
    assert after == before, (before, after)
    assert all(restarts == 0 for _, restarts in after.pods), after.pods


def test_a_certificate_not_signed_by_the_platform_ca_fails_the_probe_until_a_good_one_returns(
    platform: Platform, ns: str
) -> None:
    with platform.issuer.paused():
        name = "forged"
        platform.create_order(ns, name, hf(SMALL))
        wait_for(
            lambda: platform.order(ns, name),
            lambda o: bool((o.get("status") or {}).get("endpoint")),
            timeout=120,
            message=f"{ns}/{name} endpoint",
        )
        host = endpoint_host(platform, ns, name)
        hosts = (host, f"{host}.cluster.local")
        ca_pem = platform.ca_file.read_bytes()
        # Nothing issues the Certificate here (cert-manager is paused): the runtime has no
        # certificate to present, so the probe fails and the order is not Ready until the Secret
        # is written.
        wait_for(
            lambda: [h for h in platform.runtime.handshakes() if h["host"] == host],
            bool,
            timeout=120,
            message=f"a probe of {host} before any certificate",
        )
        assert all(
            not h["ok"] and h["serial"] is None for h in platform.runtime.handshakes() if h["host"] == host
        )
        assert (platform.order(ns, name).get("status") or {}).get("phase") != "Ready"

        good_cert, good_key = make_server_pair(ca_pem, platform.ca_key_pem, hosts)
        write_tls_secret(platform, ns, name, good_cert, good_key)
        platform.wait_phase(ns, name, "Ready", timeout=120)
        wait_probe_served(platform, host, leaf_serial(good_cert))

        rogue_cert, rogue_key = make_server_pair(*make_ca("not the platform CA"), hosts)
        write_tls_secret(platform, ns, name, rogue_cert, rogue_key)
        failed = platform.wait_reason(ns, name, "Ready", "ServiceUnhealthy", timeout=60)
        ready = platform.condition(failed, "Ready")
        assert ready["status"] == "False"
        assert "certificate verify failed" in ready["message"], ready["message"]
        refused = [
            h
            for h in platform.runtime.handshakes()
            if h["host"] == host and h["serial"] == leaf_serial(rogue_cert)
        ]
        assert refused and not any(h["ok"] for h in refused), refused

        renewed_cert, renewed_key = make_server_pair(ca_pem, platform.ca_key_pem, hosts)
        write_tls_secret(platform, ns, name, renewed_cert, renewed_key)
        platform.wait_phase(ns, name, "Ready", timeout=60)
        wait_probe_served(platform, host, leaf_serial(renewed_cert))
