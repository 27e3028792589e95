"""The local control plane's certificates, written to files and reused when present (devtools.pki makes them)."""

from __future__ import annotations

import datetime as dt
import pathlib

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from devtools.pki import Key, cert_pem, key_pem, load_key, new_ca, new_leaf


def _write_private(path: pathlib.Path, data: bytes) -> None:
    path.write_bytes(data)
    path.chmod(0o600)


def make_ca(directory: pathlib.Path, name: str, cn: str) -> tuple[x509.Certificate, Key]:
    """A self-signed CA, written as ``<name>.crt``/``<name>.key``; reused when present."""
    crt, key_path = directory / f"{name}.crt", directory / f"{name}.key"
    if crt.exists() and key_path.exists():
        return x509.load_pem_x509_certificate(crt.read_bytes()), load_key(key_path.read_bytes())
    cert, key = new_ca(cn, now=dt.datetime.now(dt.UTC), days=3650)
    crt.write_bytes(cert_pem(cert))
    _write_private(key_path, key_pem(key))
    return cert, key


def issue(
    directory: pathlib.Path,
    name: str,
    ca: tuple[x509.Certificate, Key],
    *,
    cn: str,
    org: str | None = None,
    dns: tuple[str, ...] = (),
    ips: tuple[str, ...] = (),
    server: bool = False,
    client: bool = False,
    days: int = 3650,
) -> pathlib.Path:
    """A leaf certificate signed by ``ca``, written as ``<name>.crt``/``<name>.key``; reused when present."""
    crt = directory / f"{name}.crt"
    if crt.exists() and (directory / f"{name}.key").exists():
        return crt
    cert, key = new_leaf(
        ca[0],
        ca[1],
        common_name=cn,
        org=org,
        hosts=(*dns, *ips),
        server=server,
        client=client,
        now=dt.datetime.now(dt.UTC),
        days=days,
    )
    crt.write_bytes(cert_pem(cert))
    _write_private(directory / f"{name}.key", key_pem(key))
    return crt


def service_account_keys(directory: pathlib.Path) -> tuple[pathlib.Path, pathlib.Path]:
    priv, pub = directory / "sa.key", directory / "sa.pub"
    if not priv.exists():
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        _write_private(
            priv,
            key.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
            ),
        )
        pub.write_bytes(
            key.public_key().public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            )
        )
    return priv, pub
