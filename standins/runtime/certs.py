"""Server certificates for the runtime stand-in, minted per SNI name and signed by the platform CA.

The controller's probe verifies the endpoint against the platform CA for the endpoint's own host
name, so the stand-in presents, for each name a client asks for, a certificate for exactly that
name. ``make_ca`` creates a throwaway CA for tests and demos.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import ssl
import tempfile
import threading
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import dsa, ec, ed448, ed25519, rsa
from cryptography.hazmat.primitives.asymmetric.types import CertificateIssuerPrivateKeyTypes
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

DEFAULT_NAME = "runtime-standin.local"
"""The name on the certificate offered to clients that send no SNI."""


def make_ca(common_name: str = "runtime stand-in test CA") -> tuple[bytes, bytes]:
    """A self-signed CA: (certificate PEM, private key PEM)."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(hours=1))
        .not_valid_after(now + dt.timedelta(days=30))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return cert.public_bytes(serialization.Encoding.PEM), key_pem


class CertMinter:
    """Mints and caches one server ``SSLContext`` per host name."""

    def __init__(
        self, *, ca_cert_pem: bytes, ca_key_pem: bytes, validity: dt.timedelta = dt.timedelta(days=7)
    ):
        self._ca_cert = x509.load_pem_x509_certificate(ca_cert_pem)
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
        self._ca_key: CertificateIssuerPrivateKeyTypes = key
        self._validity = validity
        self._lock = threading.Lock()
        self._contexts: dict[str, ssl.SSLContext] = {}
        self._dir = tempfile.TemporaryDirectory(prefix="runtime-standin-certs-")

    def close(self) -> None:
        self._dir.cleanup()

    @property
    def minted(self) -> list[str]:
        with self._lock:
            return sorted(self._contexts)

    def context_for(self, name: str) -> ssl.SSLContext:
        """The server context presenting a certificate for ``name`` (minted on first use)."""
        name = name.lower().rstrip(".")
        with self._lock:
            ctx = self._contexts.get(name)
            if ctx is None:
                ctx = self._mint(name)
                self._contexts[name] = ctx
            return ctx

    def _mint(self, name: str) -> ssl.SSLContext:
        key = ec.generate_private_key(ec.SECP256R1())
        now = dt.datetime.now(dt.UTC)
        san: x509.GeneralName
        try:
            san = x509.IPAddress(ipaddress.ip_address(name))
        except ValueError:
            san = x509.DNSName(name)
        cert = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name[:64])]))
            .issuer_name(self._ca_cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + self._validity)
            .add_extension(x509.SubjectAlternativeName([san]), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .sign(self._ca_key, hashes.SHA256())
        )
        stem = Path(self._dir.name) / f"{len(self._contexts)}"
        cert_file, key_file = stem.with_suffix(".crt"), stem.with_suffix(".key")
        chain = cert.public_bytes(serialization.Encoding.PEM) + self._ca_cert.public_bytes(
            serialization.Encoding.PEM
        )
        cert_file.write_bytes(chain)
        key_file.write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
            )
        )
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        ctx.load_cert_chain(cert_file, key_file)
        return ctx
