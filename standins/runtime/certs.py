"""Server certificates for the runtime stand-in, minted per SNI name and signed by the platform CA.

The controller's probe verifies the endpoint against the platform CA for the endpoint's own host
name, so the stand-in presents, for each name a client asks for, a certificate for exactly that
name. ``make_ca`` creates a throwaway CA for tests and demos. When the order's ``<order>-tls``
Secret exists, the stand-in serves that instead (``standins.runtime.endpoint_tls``).
"""

from __future__ import annotations

import datetime as dt
import ssl
import tempfile
import threading
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import dsa, ec, ed448, ed25519, rsa
from cryptography.hazmat.primitives.asymmetric.types import CertificateIssuerPrivateKeyTypes

from devtools.pki import cert_pem, key_pem, new_ca, new_leaf
from standins.runtime.endpoint_tls import ServedCert, serial_hex

DEFAULT_NAME = "runtime-standin.local"
"""The name on the certificate offered to clients that send no SNI."""


def make_ca(common_name: str = "runtime stand-in test CA", *, days: int = 30) -> tuple[bytes, bytes]:
    """A self-signed CA valid for ``days``: (certificate PEM, private key PEM)."""
    cert, key = new_ca(common_name, now=dt.datetime.now(dt.UTC), days=days)
    return cert_pem(cert), key_pem(key)


def make_server_pair(ca_cert_pem: bytes, ca_key_pem: bytes, hosts: tuple[str, ...]) -> tuple[bytes, bytes]:
    """A serving certificate for ``hosts`` signed by the CA, with a fresh key and serial: what
    cert-manager's CA issuer writes into a ``kubernetes.io/tls`` Secret (certificate PEM, key PEM)."""
    ca_cert = x509.load_pem_x509_certificate(ca_cert_pem)
    cert, key = new_leaf(
        ca_cert,
        _issuer_key(ca_key_pem),
        common_name=hosts[0],
        hosts=hosts,
        server=True,
        now=dt.datetime.now(dt.UTC),
        days=7,
    )
    return cert_pem(cert), key_pem(key)


def _issuer_key(ca_key_pem: bytes) -> CertificateIssuerPrivateKeyTypes:
    key = serialization.load_pem_private_key(ca_key_pem, password=None)
    signers = (
        ec.EllipticCurvePrivateKey,
        rsa.RSAPrivateKey,
        dsa.DSAPrivateKey,
        ed25519.Ed25519PrivateKey,
        ed448.Ed448PrivateKey,
    )
    if not isinstance(key, signers):
        raise ValueError("the CA key cannot sign certificates")
    return key


class CertMinter:
    """Mints and caches one server ``SSLContext`` per host name."""

    def __init__(
        self, *, ca_cert_pem: bytes, ca_key_pem: bytes, validity: dt.timedelta = dt.timedelta(days=7)
    ):
        self._ca_cert = x509.load_pem_x509_certificate(ca_cert_pem)
        self._ca_key = _issuer_key(ca_key_pem)
        self._validity = validity
        self._lock = threading.Lock()
        self._contexts: dict[str, ServedCert] = {}
        self._dir = tempfile.TemporaryDirectory(prefix="runtime-standin-certs-")

    def close(self) -> None:
        self._dir.cleanup()

    @property
    def minted(self) -> list[str]:
        with self._lock:
            return sorted(self._contexts)

    def context_for(self, name: str) -> ssl.SSLContext:
        """The server context presenting a certificate for ``name`` (minted on first use)."""
        return self.served_for(name).context

    def served_for(self, name: str) -> ServedCert:
        """``context_for`` with the minted certificate's serial."""
        name = name.lower().rstrip(".")
        with self._lock:
            served = self._contexts.get(name)
            if served is None:
                served = self._mint(name)
                self._contexts[name] = served
            return served

    def _mint(self, name: str) -> ServedCert:
        cert, key = new_leaf(
            self._ca_cert,
            self._ca_key,
            common_name=name,
            hosts=(name,),
            server=True,
            now=dt.datetime.now(dt.UTC),
            days=self._validity / dt.timedelta(days=1),
        )
        stem = Path(self._dir.name) / f"{len(self._contexts)}"
        cert_file, key_file = stem.with_suffix(".crt"), stem.with_suffix(".key")
        chain = cert_pem(cert) + cert_pem(self._ca_cert)
        cert_file.write_bytes(chain)
        key_file.write_bytes(key_pem(key))
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        ctx.load_cert_chain(cert_file, key_file)
        return ServedCert(ctx, serial_hex(cert), "minted")
