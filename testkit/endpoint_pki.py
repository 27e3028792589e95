"""The order endpoints' PKI on the e2e platform: the real cert-manager and the shipped issuer chain.

Every e2e platform (``testkit.platform.running_platform``) runs cert-manager's controller, built from
its Go module (devtools/cluster/components/cert_manager.py, cached by version), as a local process, and
applies ``deploy/base/cert-manager/endpoints-pki.yaml``, the issuer chain the module ships:

    ClusterIssuer inference-selfsigned -> Certificate cert-manager/inference-platform-ca (the CA)
    -> ClusterIssuer inference-endpoints (every order's Certificate names it)
    -> ClusterIssuer inference-ca-bundle (the same CA) -> Certificate d8-inference/inference-platform-ca,
       which carries the CA (``ca.crt``) into the module's namespace for the controller's probe
       (module setting ``platformCAFile``).

So an order's ``<order>-tls`` is issued by cert-manager from the Certificate the controller rendered,
and the probe trusts what the platform's own Secret says, not a CA the test made up. The CA's key
(``tls.key`` of cert-manager/inference-platform-ca) is read only for tests that write a certificate
by hand while issuing is paused (``RealIssuer.paused``).

The chain is cluster-scoped and outlives a module: a later module finds it issued and applies it
again at no cost. No approver-policy here: cert-manager's own approver approves the requests
(tests/integration/test_certificate_policy.py runs the policies).

``trust_bundle`` and ``signing_pair`` are pure; the rest talks to the plane.
"""

from __future__ import annotations

import base64
import binascii
import json
import pathlib
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from cryptography import x509

from devtools import procs
from devtools.cluster.components import cert_manager
from devtools.cluster.components.base import Target
from devtools.cluster.handle import Cluster, Kubectl
from devtools.wait import wait_for

ROOT = pathlib.Path(__file__).resolve().parents[1]
MANIFEST = ROOT / "deploy" / "base" / "cert-manager" / "endpoints-pki.yaml"
ENDPOINT_ISSUER = "inference-endpoints"  # module setting endpointIssuer's default, a ClusterIssuer
TRUST_SECRET = ("d8-inference", "inference-platform-ca")  # ca.crt: what the probe trusts
CA_SECRET = ("cert-manager", "inference-platform-ca")  # tls.crt/tls.key: the CA issuer's own pair

Obj = dict[str, Any]


def _decoded(data: Mapping[str, Any], key: str) -> bytes | None:
    raw = data.get(key)
    if not isinstance(raw, str) or not raw:
        return None
    try:
        return base64.b64decode(raw, validate=True) or None
    except (binascii.Error, ValueError):
        return None


def _is_ca_certificate(pem: bytes) -> bool:
    try:
        cert = x509.load_pem_x509_certificate(pem)
        return bool(cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca)
    except (ValueError, x509.ExtensionNotFound):
        return False


def trust_bundle(secret: Obj | None) -> bytes | None:
    """The CA certificate (PEM) in a Secret's ``ca.crt`` (base64, as the API returns it); None while
    the Secret, or a CA certificate in it, is not there."""
    pem = _decoded((secret or {}).get("data") or {}, "ca.crt")
    return pem if pem is not None and _is_ca_certificate(pem) else None


def signing_pair(secret: Obj | None) -> tuple[bytes, bytes] | None:
    """The CA's (certificate PEM, key PEM) in a ``kubernetes.io/tls`` Secret; None while it is not
    issued or its certificate is not a CA."""
    data = (secret or {}).get("data") or {}
    cert, key = _decoded(data, "tls.crt"), _decoded(data, "tls.key")
    if cert is None or key is None or not _is_ca_certificate(cert):
        return None
    return cert, key


@dataclass(frozen=True)
class EndpointPki:
    ca_pem: bytes  # ca.crt of d8-inference/inference-platform-ca: the probe trusts it
    ca_key_pem: bytes  # the CA issuer's key: for certificates written by hand while issuing is paused
    seconds: float  # how long the apply and the wait took


def _secret(kubectl: Kubectl, namespace: str, name: str) -> Obj | None:
    out = kubectl("get", "secret", name, "-n", namespace, "-o", "json", "--ignore-not-found").stdout
    return json.loads(out) if out.strip() else None


def apply_endpoint_pki(kubectl: Kubectl, *, field_manager: str, timeout: float = 60) -> EndpointPki:
    """endpoints-pki.yaml applied, and waited for until the CA is issued and carried into the
    module's namespace; cert-manager must be running."""
    start = time.monotonic()
    kubectl(
        "apply", "--server-side", "--force-conflicts", f"--field-manager={field_manager}", "-f", str(MANIFEST)
    )
    pair = wait_for(
        lambda: signing_pair(_secret(kubectl, *CA_SECRET)),
        lambda p: p is not None,
        timeout=timeout,
        interval=0.1,
        message=f"cert-manager to issue the platform CA into {'/'.join(CA_SECRET)}",
    )
    assert pair is not None
    bundle = wait_for(
        lambda: trust_bundle(_secret(kubectl, *TRUST_SECRET)),
        lambda b: b is not None,
        timeout=timeout,
        interval=0.1,
        message=f"cert-manager to carry the platform CA into {'/'.join(TRUST_SECRET)} (ca.crt)",
    )
    assert bundle is not None
    if x509.load_pem_x509_certificate(bundle) != x509.load_pem_x509_certificate(pair[0]):
        raise AssertionError(f"{'/'.join(TRUST_SECRET)} carries another CA than {'/'.join(CA_SECRET)}")
    return EndpointPki(bundle, pair[1], time.monotonic() - start)


@dataclass
class RealIssuer:
    """cert-manager's controller as a local process; ``paused()`` stops it for a block (nothing is
    issued or renewed meanwhile) and starts it again after."""

    target: Target
    process: procs.Background | None = None
    ready_seconds: list[float] = field(default_factory=list)  # each start, to its "running" line

    def start(self, *, timeout: float = 120) -> None:
        begin = time.monotonic()
        (self.process,) = cert_manager.start(self.target, ("controller",))
        procs.wait_for_line(self.process, cert_manager.READY_LINE, timeout=timeout)
        self.ready_seconds.append(time.monotonic() - begin)

    def stop(self) -> None:
        if self.process is not None:
            cert_manager.stop([self.process], state=self.target.state)
            self.process = None

    @contextmanager
    def paused(self) -> Iterator[None]:
        self.stop()
        try:
            yield
        finally:
            self.start()


@contextmanager
def running_issuer(cluster: Cluster, kubectl: Kubectl, state: pathlib.Path) -> Iterator[RealIssuer]:
    """cert-manager's controller running until the block ends (its CRDs are installed already)."""
    target = Target(cluster.kubeconfig, state, kubectl.out, field_manager="e2e")
    issuer = RealIssuer(target)
    cert_manager.build()
    try:
        issuer.start()
        yield issuer
    finally:
        issuer.stop()
