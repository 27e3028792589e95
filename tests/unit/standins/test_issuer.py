"""The issuer stand-in writes the Secret cert-manager's CA issuer would write for a Certificate."""

from __future__ import annotations

import base64
import datetime as dt

import pytest
from cryptography import x509

from standins.issuer import DEFAULT_HOURS, duration_hours, secret_for
from standins.runtime import make_ca


@pytest.mark.parametrize(
    ("text", "hours"),
    [
        ("2160h", 2160.0),
        ("1h30m", 1.5),
        ("90m", 1.5),
        ("3600s", 1.0),
        (None, DEFAULT_HOURS),
        ("2d", DEFAULT_HOURS),
    ],
)
def test_a_go_duration_is_read_in_hours(text: str | None, hours: float) -> None:
    assert duration_hours(text) == pytest.approx(hours)


def certificate(**spec: object) -> dict[str, object]:
    return {
        "apiVersion": "cert-manager.io/v1",
        "kind": "Certificate",
        "metadata": {"name": "chat-tls", "namespace": "team"},
        "spec": {
            "secretName": "chat-tls",
            "dnsNames": ["chat.team.svc", "chat.team.svc.cluster.local"],
            **spec,
        },
    }


def test_the_secret_holds_a_leaf_for_the_dns_names_signed_by_the_ca_for_the_duration() -> None:
    ca_pem, ca_key = make_ca("platform CA (test)")
    template = {"labels": {"ai.deckhouse.io/inference-service": "chat"}}
    secret = secret_for(certificate(duration="720h", secretTemplate=template), ca_pem, ca_key)
    assert secret is not None
    assert (secret["type"], secret["metadata"]["name"], secret["metadata"]["namespace"]) == (
        "kubernetes.io/tls",
        "chat-tls",
        "team",
    )
    assert secret["metadata"]["labels"] == {"ai.deckhouse.io/inference-service": "chat"}
    leaf = x509.load_pem_x509_certificate(base64.b64decode(secret["data"]["tls.crt"]))
    leaf.verify_directly_issued_by(x509.load_pem_x509_certificate(ca_pem))
    sans = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert sans.get_values_for_type(x509.DNSName) == ["chat.team.svc", "chat.team.svc.cluster.local"]
    left = leaf.not_valid_after_utc - dt.datetime.now(dt.UTC)
    assert dt.timedelta(hours=720) - dt.timedelta(minutes=1) < left <= dt.timedelta(hours=720)
    assert base64.b64decode(secret["data"]["ca.crt"]) == ca_pem
    assert base64.b64decode(secret["data"]["tls.key"]).startswith(b"-----BEGIN")


@pytest.mark.parametrize(
    "spec", [{"dnsNames": []}, {"secretName": ""}], ids=["no DNS name", "no Secret name"]
)
def test_a_certificate_naming_no_secret_or_no_host_gets_none(spec: dict[str, object]) -> None:
    ca_pem, ca_key = make_ca("platform CA (test)")
    assert secret_for(certificate(**spec), ca_pem, ca_key) is None
