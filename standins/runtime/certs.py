"""Certificates for tests and demos: ``make_ca`` creates a throwaway platform CA and
``make_server_pair`` issues a serving certificate from it, as cert-manager's CA issuer does.

The runtime stand-in itself issues nothing: it serves the certificate of the order's
``<order>-tls`` Secret that the platform (cert-manager, or ``standins.issuer`` where cert-manager
does not run) wrote, and refuses the handshake while there is none
(``standins.runtime.endpoint_tls``).
"""

from __future__ import annotations

import datetime as dt

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import dsa, ec, ed448, ed25519, rsa
from cryptography.hazmat.primitives.asymmetric.types import CertificateIssuerPrivateKeyTypes

from devtools.pki import cert_pem, key_pem, new_ca, new_leaf


def make_ca(common_name: str = "runtime stand-in test CA", *, days: int = 30) -> tuple[bytes, bytes]:
    """A self-signed CA valid for ``days``: (certificate PEM, private key PEM)."""
    cert, key = new_ca(common_name, now=dt.datetime.now(dt.UTC), days=days)
    return cert_pem(cert), key_pem(key)


def make_server_pair(
    ca_cert_pem: bytes, ca_key_pem: bytes, hosts: tuple[str, ...], *, days: float = 7
) -> tuple[bytes, bytes]:
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
        days=days,
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
