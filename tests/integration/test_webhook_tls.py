"""``python -m webhook`` over TLS: TLS 1.2 or newer only, and a rotated certificate served without a restart."""

from __future__ import annotations

import datetime as dt
import json
import pathlib
import socket
import ssl
from collections.abc import Iterator

import pytest

from devtools.local_pki import issue_serving_certificate
from devtools.product.webhook import WebhookProcess, new_pki
from testkit.webhook import make_order, make_review
from webhook.tls import ReloadingCertificate


@pytest.fixture
def served(tmp_path: pathlib.Path) -> Iterator[WebhookProcess]:
    process = WebhookProcess(new_pki(tmp_path), reload_check_seconds=0).start()
    yield process
    process.stop()


def test_a_review_is_answered_over_tls(served: WebhookProcess) -> None:
    review = make_review(make_order(spec__runtime={"image": "x"}), uid="tls-1")
    with served.client() as client:
        res = client.post("/mutate-inferenceservice", content=json.dumps(review).encode())
    assert res.status_code == 200
    assert res.json()["response"]["uid"] == "tls-1"
    assert res.json()["response"]["patchType"] == "JSONPatch"


def test_tls_older_than_1_2_is_refused(served: WebhookProcess) -> None:
    context = ssl.create_default_context(cafile=str(served.pki.ca_file))
    # The client side of this test is deliberately obsolete.
    with pytest.warns(DeprecationWarning, match="TLSVersion.TLSv1 is deprecated"):
        context.minimum_version = ssl.TLSVersion.TLSv1
    with pytest.warns(DeprecationWarning, match="TLSVersion.TLSv1_1 is deprecated"):
        context.maximum_version = ssl.TLSVersion.TLSv1_1
    context.set_ciphers("ALL:@SECLEVEL=0")
    with (
        socket.create_connection(("127.0.0.1", served.port), timeout=5) as raw,
        pytest.raises(ssl.SSLError),
        context.wrap_socket(raw, server_hostname="127.0.0.1"),
    ):
        pass


def test_the_server_context_and_every_reloaded_one_require_tls_1_2(tmp_path: pathlib.Path) -> None:
    pki = new_pki(tmp_path)
    certificate = ReloadingCertificate(cert_file=pki.cert_file, key_file=pki.key_file, check_every=0)
    assert certificate.context.minimum_version == ssl.TLSVersion.TLSv1_2
    issue_serving_certificate(pki, now=dt.datetime.now(dt.UTC))
    assert certificate.maybe_reload()
    assert certificate.current.minimum_version == ssl.TLSVersion.TLSv1_2


@pytest.mark.parametrize("version", [ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3])
def test_tls_1_2_and_1_3_are_served(served: WebhookProcess, version: ssl.TLSVersion) -> None:
    context = ssl.create_default_context(cafile=str(served.pki.ca_file))
    context.minimum_version = context.maximum_version = version
    with (
        socket.create_connection(("127.0.0.1", served.port), timeout=5) as raw,
        context.wrap_socket(raw, server_hostname="127.0.0.1") as tls,
    ):
        assert (
            tls.version() == {ssl.TLSVersion.TLSv1_2: "TLSv1.2", ssl.TLSVersion.TLSv1_3: "TLSv1.3"}[version]
        )


def test_a_rotated_certificate_is_served_without_a_restart(served: WebhookProcess) -> None:
    assert served.proc is not None
    pid = served.proc.pid
    before = served.served_serial()
    rotated = issue_serving_certificate(served.pki, now=dt.datetime.now(dt.UTC))
    assert rotated != before
    assert served.served_serial() == rotated
    assert served.proc.pid == pid and served.proc.poll() is None
    with served.client() as client:
        assert client.get("/healthz").status_code == 200


def test_a_half_written_pair_keeps_the_old_certificate_until_it_is_whole(served: WebhookProcess) -> None:
    before = served.served_serial()
    good_key = served.pki.key_file.read_bytes()
    served.pki.key_file.write_bytes(b"not a key")
    assert served.served_serial() == before
    served.pki.key_file.write_bytes(good_key)
    rotated = issue_serving_certificate(served.pki, now=dt.datetime.now(dt.UTC))
    assert served.served_serial() == rotated
