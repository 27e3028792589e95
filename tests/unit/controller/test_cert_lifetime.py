"""The endpoint Certificate's lifetime settings are checked as cert-manager's webhook checks them."""

from __future__ import annotations

import pytest

from controller.config.cert_lifetime import go_duration_seconds, lifetime_problem
from controller.config.settings import SettingsError, parse_settings


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("2160h", 2160 * 3600.0), ("1h30m", 5400.0), ("1.5h", 5400.0), ("90s", 90.0), ("-2m", -120.0),
     ("0", 0.0), ("300ms", 0.3), (".5s", 0.5)],
)  # fmt: skip
def test_a_go_duration_is_read_as_go_reads_it(text: str, seconds: float) -> None:
    assert go_duration_seconds(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "90", "90d", "h", "1h 30m", "1..5h", "-"])
def test_anything_else_is_not_a_go_duration(text: str) -> None:
    with pytest.raises(ValueError, match="not a Go duration"):
        go_duration_seconds(text)


def test_the_defaults_renew_when_a_third_of_the_lifetime_is_left_and_pass() -> None:
    assert go_duration_seconds("720h") * 3 == go_duration_seconds("2160h")
    assert lifetime_problem("2160h", "720h") is None


@pytest.mark.parametrize(
    ("duration", "renew_before", "says"),
    [
        ("59m", "10m", "`endpointCertificateDuration` must be at least 1h"),
        ("24h", "4m", "`endpointCertificateRenewBefore` must be at least 5m"),
        ("24h", "24h", "must be less than `endpointCertificateDuration` (24h)"),
        ("720h", "2160h", "must be less than"),
        ("90d", "720h", "`endpointCertificateDuration`: '90d' is not a Go duration"),
    ],
    ids=["a lifetime under an hour", "a renewal under five minutes", "renewal at issuance", "renewal before issuance",
         "days are not a Go unit"],
)  # fmt: skip
def test_a_lifetime_cert_manager_would_refuse_is_refused_at_start(
    duration: str, renew_before: str, says: str
) -> None:
    problem = lifetime_problem(duration, renew_before)
    assert problem is not None and says in problem
    data = {"endpointCertificateDuration": duration, "endpointCertificateRenewBefore": renew_before}
    with pytest.raises(SettingsError, match="module setting `endpointCertificate"):
        parse_settings(data, {})
