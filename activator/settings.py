"""The activator's settings (one frozen value, built from the command line by ``activator.__main__``)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True, kw_only=True)
class Settings:
    host: str = "0.0.0.0"
    port: int = 8443
    """The HTTPS listener that serves every order by SNI."""
    admin_host: str = "0.0.0.0"
    admin_port: int = 9090
    """Plain HTTP: ``/metrics``, ``/healthz``, ``/readyz``."""
    upstream_ca_file: str
    """The platform CA the orders' certificates are checked against when forwarding."""
    upstream_address_override: str | None = None
    """``HOST:PORT`` every forward goes to (with the order's SNI), whatever the EndpointSlices say."""
    max_hold_seconds: float = 300.0
    retry_after_seconds: int = 10
    max_held_per_order: int = 64
    max_held_total: int = 1024
    max_connections: int = 1024
    """Client connections open at once (held, reading or forwarding); beyond, closed after the handshake.
    Each costs about 0.3 MiB, whoever opens it (asyncio allocates a 256 KiB TLS read buffer per
    connection): 1024 of them about 320 MiB, within half the Deployment's 1 GiB limit."""
    max_header_bytes: int = 64 * 1024
    max_body_bytes: int = 4 * 1024 * 1024
    max_body_bytes_total: int = 256 * 1024 * 1024
    """The bodies kept at once, every connection together (read, held or being forwarded: a body with
    a Content-Length counts as that, a chunked one as ``max_body_bytes``); beyond, 503 with Retry-After
    before the body is read. Only a caller with a valid token gets this far, so this bounds what one
    tenant's callers can make the activator hold for every order."""
    header_timeout_seconds: float = 10.0
    """For the TLS handshake, and again for the request line and headers."""
    body_timeout_seconds: float = 60.0
    upstream_poll_seconds: float = 0.2
    """How often a held request asks ``Upstreams.ready`` again (an in-memory read)."""
    upstream_retry_seconds: float = 1.0
    """After a forward that failed before any answer (a replica listed ready that does not listen yet),
    how long the request is held again before the ready replicas are tried anew (within the bound)."""
    upstream_connect_timeout_seconds: float = 10.0
    upstream_read_timeout_seconds: float = 600.0
    """Between two reads of the upstream's answer (a long generation streams, a long prefill does not)."""

    def __post_init__(self) -> None:
        for name in (
            "max_hold_seconds",
            "max_held_per_order",
            "max_held_total",
            "max_connections",
            "max_header_bytes",
            "max_body_bytes",
            "max_body_bytes_total",
            "header_timeout_seconds",
            "body_timeout_seconds",
            "upstream_poll_seconds",
            "upstream_retry_seconds",
            "upstream_connect_timeout_seconds",
            "upstream_read_timeout_seconds",
        ):
            if not getattr(self, name) > 0:
                raise ValueError(f"`{name}` must be greater than 0")
        if self.retry_after_seconds < 0:
            raise ValueError("`retry_after_seconds` must not be negative")
        if self.upstream_address_override is not None:
            host, sep, port = self.upstream_address_override.rpartition(":")
            if not (host and sep and port.isdigit()):
                raise ValueError("`upstream_address_override` must be HOST:PORT")
