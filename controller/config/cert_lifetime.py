"""The endpoint Certificate's lifetime settings, checked as cert-manager's webhook checks them. Pure.

``endpointCertificateDuration`` and ``endpointCertificateRenewBefore`` go into every order's
Certificate (``controller.render.network.certificate``) as Go durations (``metav1.Duration``, parsed
by Go's ``time.ParseDuration``). cert-manager refuses a Certificate whose duration is under an hour,
whose renewBefore is under five minutes, or whose renewBefore is not less than its duration
(``ValidateDuration`` in internal/apis/certmanager/validation/certificate.go, v1.21): with such
settings every order's apply would fail, so the controller refuses them at start instead.
"""

from __future__ import annotations

import re

_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")

MINIMUM_DURATION = 3600.0  # cert-manager's MinimumCertificateDuration (1h)
MINIMUM_RENEW_BEFORE = 300.0  # cert-manager's MinimumRenewBefore (5m)


def go_duration_seconds(text: str) -> float:
    """Seconds in a Go duration (``2160h``, ``1h30m``, ``-1.5s``, ``0``); ValueError otherwise."""
    s = text.strip()
    sign = -1.0 if s.startswith("-") else 1.0
    body = s[1:] if s[:1] in "+-" else s
    if body == "0":
        return 0.0
    pos, total = 0, 0.0
    while pos < len(body):
        m = _PART.match(body, pos)
        if m is None:
            raise ValueError(f"{text!r} is not a Go duration (such as 2160h or 1h30m)")
        total += float(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
    if not body:
        raise ValueError(f"{text!r} is not a Go duration (such as 2160h or 1h30m)")
    return sign * total


def lifetime_problem(duration: str, renew_before: str) -> str | None:
    """Why cert-manager would refuse a Certificate with these values; None when it accepts them."""
    try:
        total = go_duration_seconds(duration)
    except ValueError as e:
        return f"`endpointCertificateDuration`: {e}"
    try:
        renew = go_duration_seconds(renew_before)
    except ValueError as e:
        return f"`endpointCertificateRenewBefore`: {e}"
    if total < MINIMUM_DURATION:
        return f"`endpointCertificateDuration` must be at least 1h, not {duration}"
    if renew < MINIMUM_RENEW_BEFORE:
        return f"`endpointCertificateRenewBefore` must be at least 5m, not {renew_before}"
    if renew >= total:
        return (
            f"`endpointCertificateRenewBefore` ({renew_before}) must be less than "
            f"`endpointCertificateDuration` ({duration})"
        )
    return None
