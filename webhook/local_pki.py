"""A throwaway CA and serving certificate for running the webhook outside a cluster (cert-manager's job
in a cluster). Used by the local registration, the integration fixture and the benchmark.

``make_serving_pki(directory)`` writes ``ca.crt``, ``tls.crt`` and ``tls.key`` for ``127.0.0.1`` and
``localhost``; calling ``issue_serving_certificate`` again rotates the serving pair under the same CA.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


@dataclass(frozen=True)
class ServingPki:
    """Where the files are."""

    ca_file: Path
    ca_key_file: Path
    cert_file: Path
    key_file: Path

    def ca_bundle(self) -> bytes:
        return self.ca_file.read_bytes()


def make_serving_pki(
    directory: str | os.PathLike[str],
    *,
    now: dt.datetime,
    hosts: tuple[str, ...] = ("127.0.0.1", "localhost"),
) -> ServingPki:
    """A new CA and a serving certificate for ``hosts`` in ``directory`` (created if missing)."""
    root = Path(directory)
    root.mkdir(parents=True, exist_ok=True)
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "inference-webhook-local-ca")])
    ca = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=365))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    pki = ServingPki(root / "ca.crt", root / "ca.key", root / "tls.crt", root / "tls.key")
    _write(pki.ca_file, ca.public_bytes(serialization.Encoding.PEM))
    _write(pki.ca_key_file, _key_pem(key), private=True)
    issue_serving_certificate(pki, now=now, hosts=hosts)
    return pki


def issue_serving_certificate(
    pki: ServingPki, *, now: dt.datetime, hosts: tuple[str, ...] = ("127.0.0.1", "localhost")
) -> int:
    """A new key and serving certificate signed by the CA, written over the old pair (a rotation).

    The files are replaced atomically, key first, as the kubelet's Secret volume swap would. Returns the
    new certificate's serial number.
    """
    ca = x509.load_pem_x509_certificate(pki.ca_file.read_bytes())
    ca_key = serialization.load_pem_private_key(pki.ca_key_file.read_bytes(), None)
    assert isinstance(ca_key, ec.EllipticCurvePrivateKey)
    key = ec.generate_private_key(ec.SECP256R1())
    sans: list[x509.GeneralName] = []
    for host in hosts:
        try:
            sans.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            sans.append(x509.DNSName(host))
    serial = x509.random_serial_number()
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "inference-webhook")]))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(serial)
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=90))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    _write(pki.key_file, _key_pem(key), private=True)
    _write(pki.cert_file, cert.public_bytes(serialization.Encoding.PEM))
    return serial


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _write(path: Path, data: bytes, *, private: bool = False) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    if private:
        tmp.chmod(0o600)
    os.replace(tmp, path)
