"""The reloading certificate: when it looks at the files, and what a handshake is handed."""

from __future__ import annotations

import datetime as dt
import pathlib
import ssl
from types import SimpleNamespace
from typing import Any

from devtools.local_pki import issue_serving_certificate, make_serving_pki
from webhook.tls import ReloadingCertificate

NOW = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.UTC)


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def hello(certificate: ReloadingCertificate) -> Any:
    """What the server context's SNI callback does on a new handshake, on a stand-in connection."""
    connection = SimpleNamespace(context=None)
    callback = certificate.context.sni_callback
    assert callback is not None
    callback(connection, None, certificate.context)  # type: ignore[arg-type]
    return connection.context


def test_a_handshake_within_the_check_interval_keeps_the_loaded_certificate(tmp_path: pathlib.Path) -> None:
    pki = make_serving_pki(tmp_path, now=NOW)
    clock = FakeClock()
    certificate = ReloadingCertificate(
        cert_file=pki.cert_file, key_file=pki.key_file, check_every=10, clock=clock
    )
    first = certificate.current
    issue_serving_certificate(pki, now=NOW)
    clock.now += 9
    assert hello(certificate) is first
    assert certificate.reloads == 0


def test_the_first_handshake_after_the_interval_gets_the_rotated_certificate(tmp_path: pathlib.Path) -> None:
    pki = make_serving_pki(tmp_path, now=NOW)
    clock = FakeClock()
    certificate = ReloadingCertificate(
        cert_file=pki.cert_file, key_file=pki.key_file, check_every=10, clock=clock
    )
    first = certificate.current
    issue_serving_certificate(pki, now=NOW)
    clock.now += 10
    handed = hello(certificate)
    assert handed is certificate.current
    assert handed is not first
    assert certificate.reloads == 1
    assert certificate.handshakes == 1


def test_unchanged_files_are_not_reloaded(tmp_path: pathlib.Path) -> None:
    pki = make_serving_pki(tmp_path, now=NOW)
    certificate = ReloadingCertificate(cert_file=pki.cert_file, key_file=pki.key_file, check_every=0)
    assert certificate.maybe_reload() is False


def test_a_key_that_does_not_match_the_certificate_keeps_the_old_pair(tmp_path: pathlib.Path) -> None:
    pki = make_serving_pki(tmp_path, now=NOW)
    certificate = ReloadingCertificate(cert_file=pki.cert_file, key_file=pki.key_file, check_every=0)
    first = certificate.current
    old_cert = pki.cert_file.read_bytes()
    issue_serving_certificate(pki, now=NOW)
    pki.cert_file.write_bytes(old_cert)  # the new key beside the old certificate: a half-done rotation
    assert certificate.maybe_reload() is False
    assert certificate.current is first
    issue_serving_certificate(pki, now=NOW)
    assert certificate.maybe_reload() is True


def test_every_context_requires_tls_1_2_or_newer(tmp_path: pathlib.Path) -> None:
    pki = make_serving_pki(tmp_path, now=NOW)
    certificate = ReloadingCertificate(cert_file=pki.cert_file, key_file=pki.key_file, check_every=0)
    issue_serving_certificate(pki, now=NOW)
    certificate.maybe_reload()
    for context in (certificate.context, certificate.current):
        assert context.minimum_version == ssl.TLSVersion.TLSv1_2
