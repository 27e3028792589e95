"""A throwaway CA and serving certificate for running the webhook outside a cluster (cert-manager's job
in a cluster). Used by the local registration, the integration fixture and the benchmark.

``make_serving_pki(directory)`` writes ``ca.crt``, ``tls.crt`` and ``tls.key`` for ``127.0.0.1`` and
``localhost``; calling ``issue_serving_certificate`` again rotates the serving pair under the same CA.
"""

from __future__ import annotations

import datetime as dt
import os
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509

from devtools.pki import cert_pem, key_pem, load_key, new_ca, new_leaf


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
    ca, key = new_ca("inference-webhook-local-ca", now=now, days=365)
    pki = ServingPki(root / "ca.crt", root / "ca.key", root / "tls.crt", root / "tls.key")
    _write(pki.ca_file, cert_pem(ca))
    _write(pki.ca_key_file, key_pem(key), private=True)
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
    ca_key = load_key(pki.ca_key_file.read_bytes())
    cert, key = new_leaf(
        ca, ca_key, common_name="inference-webhook", hosts=hosts, server=True, now=now, days=90
    )
    _write(pki.key_file, key_pem(key), private=True)
    _write(pki.cert_file, cert_pem(cert))
    return int(cert.serial_number)


def _write(path: Path, data: bytes, *, private: bool = False) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    if private:
        tmp.chmod(0o600)
    os.replace(tmp, path)
