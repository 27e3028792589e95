"""The Inference API probe: ``GET <url>/v1/models`` with the Bearer token, TLS verified. I/O edge.

The URL is always the order's Service by its in-cluster name (``exposure.probe_url``), External
orders included: the token never crosses the shared ingress.

The probe verifies the endpoint's certificate against the platform CA for the endpoint's own host
name. When the module setting ``probeAddressOverride`` is set (a runtime stand-in, a port-forward),
the TCP connection goes to that address instead, while the endpoint's host is still sent as SNI and
``Host`` and still verified: only the address changes, never the trust.

The endpoint is the tenant's pod: the answer is read within the probe timeout, wall clock, and
at most ``ANSWER_LIMIT`` bytes of it (``controller.live.bounded_http``).
"""

from __future__ import annotations

import json
import ssl
from dataclasses import dataclass
from urllib.parse import urlsplit

import httpx

from controller.live import bounded_http

ANSWER_LIMIT = 256 * 1024  # a model list is a few hundred bytes per model


@dataclass(frozen=True, slots=True)
class ProbeResult:
    ok: bool
    detail: str  # a sentence for the condition message; never contains the token


class Prober:
    """Probes endpoints; one instance per controller process (it holds the TLS context)."""

    def __init__(self, *, ca_file: str, address_override: str, timeout: float) -> None:
        ctx = ssl.create_default_context(cafile=ca_file or None)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        # No keep-alive (bounded_http): with an address override every endpoint shares one address,
        # and a pooled connection would carry another endpoint's SNI and certificate check.
        self._client = bounded_http.client(seconds=timeout, verify=ctx)
        self._override = address_override.strip()

    def close(self) -> None:
        self._client.close()

    def probe(self, url: str, token: str | None) -> ProbeResult:
        parts = urlsplit(url)
        host = parts.hostname or ""
        target = (
            f"{parts.scheme}://{self._override}" if self._override else f"{parts.scheme}://{parts.netloc}"
        )
        headers = {"Host": parts.netloc, "Accept": "application/json"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        try:
            resp = bounded_http.get(
                self._client,
                f"{target}/v1/models",
                limit=ANSWER_LIMIT,
                headers=headers,
                extensions={"sni_hostname": host},
            )
        except httpx.HTTPError as e:
            return ProbeResult(False, f"GET {url}/v1/models failed: {type(e).__name__}: {_short(str(e))}")
        if resp.status != 200:
            return ProbeResult(False, f"GET {url}/v1/models answered HTTP {resp.status}.")
        try:
            body = json.loads(resp.body)
        except ValueError:
            return ProbeResult(False, f"GET {url}/v1/models did not answer JSON.")
        if not isinstance(body, dict) or not isinstance(body.get("data"), list):
            return ProbeResult(False, f"GET {url}/v1/models did not answer an OpenAI model list.")
        return ProbeResult(True, f"GET {url}/v1/models answered with {len(body['data'])} model(s).")


def _short(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
