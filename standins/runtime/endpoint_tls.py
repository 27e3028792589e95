"""The runtime stand-in's ``--enable-ssl-refresh``: it serves the order's own ``<order>-tls`` certificate.

vLLM runs with ``--ssl-certfile``/``--ssl-keyfile`` on the files of the ``<order>-tls`` Secret that
cert-manager writes, and with ``--enable-ssl-refresh`` it reloads them when they change, so new
connections get the renewed certificate and the server never restarts. The stand-in does the same
from the Secret itself (read through ``OrderDirectory``, which caches it for a short TTL): while
the Secret holds a loadable ``tls.crt``/``tls.key`` pair, connections for the order's host get that
certificate; a changed pair is a new context for the next connection. Without the Secret, or with
a pair that does not load, the handshake is refused, as vLLM would not start without its files:
the stand-in mints no certificate of its own.

``tls_pair`` is pure; ``SecretContexts`` turns pairs into server contexts (temporary files: the
``ssl`` module loads key material only from files).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import ssl
import tempfile
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509

TLS_SECRET_TYPE = "kubernetes.io/tls"
MAX_CONTEXTS = 256  # pairs kept loaded; a rotation adds one, so this is many renewals of many orders


@dataclass(frozen=True, slots=True)
class TlsPair:
    """A PEM certificate chain (leaf first) and its PEM private key, as in a ``kubernetes.io/tls`` Secret."""

    cert_pem: bytes
    key_pem: bytes


@dataclass(frozen=True, slots=True)
class ServedCert:
    """The server context one connection gets, and what to record about it."""

    context: ssl.SSLContext
    serial: str  # the leaf's serial number, lowercase hex
    source: str  # "secret": the order's <order>-tls Secret (or a pair registered by hand with it)


def tls_pair(secret_type: str | None, data: Mapping[str, str] | None) -> TlsPair | None:
    """The pair in a Secret's ``data`` (base64, as the API returns it); None unless the Secret is of
    type ``kubernetes.io/tls`` with both keys non-empty."""
    if secret_type != TLS_SECRET_TYPE or not data:
        return None
    try:
        cert, key = (base64.b64decode(data.get(k) or "", validate=True) for k in ("tls.crt", "tls.key"))
    except (binascii.Error, ValueError):
        return None
    return TlsPair(cert, key) if cert and key else None


def serial_hex(cert: x509.Certificate) -> str:
    return format(cert.serial_number, "x")


def leaf_serial(cert_pem: bytes) -> str:
    """The serial of the first certificate in a PEM chain, lowercase hex."""
    return serial_hex(x509.load_pem_x509_certificate(cert_pem))


class SecretContexts:
    """One server context per distinct pair, loaded on first use and kept (bounded) afterwards."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._served: dict[str, ServedCert | None] = {}
        self._dir = tempfile.TemporaryDirectory(prefix="runtime-standin-secret-certs-")

    def close(self) -> None:
        self._dir.cleanup()

    def served_for(self, pair: TlsPair) -> ServedCert | None:
        """The context presenting ``pair``; None when the pair does not load (not PEM, key mismatch)."""
        digest = hashlib.sha256(
            len(pair.cert_pem).to_bytes(8, "big") + pair.cert_pem + pair.key_pem
        ).hexdigest()
        with self._lock:
            if digest in self._served:
                return self._served[digest]
            served = self._load(digest, pair)
            if len(self._served) >= MAX_CONTEXTS:
                self._served.pop(next(iter(self._served)))
            self._served[digest] = served
            return served

    def _load(self, digest: str, pair: TlsPair) -> ServedCert | None:
        stem = Path(self._dir.name) / digest[:32]
        cert_file, key_file = stem.with_suffix(".crt"), stem.with_suffix(".key")
        cert_file.write_bytes(pair.cert_pem)
        key_file.write_bytes(pair.key_pem)
        key_file.chmod(0o600)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        try:
            ctx.load_cert_chain(cert_file, key_file)
            serial = leaf_serial(pair.cert_pem)
        except (ssl.SSLError, ValueError):
            return None
        finally:
            cert_file.unlink(missing_ok=True)
            key_file.unlink(missing_ok=True)
        return ServedCert(ctx, serial, "secret")
