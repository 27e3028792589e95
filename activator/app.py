"""The activator put together: its parts from the settings and the sources, and its two listeners.

``Activator`` is what ``python -m activator`` runs and what the unit tests start in-process (with
in-memory sources and port 0).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import ssl

from prometheus_client import CollectorRegistry

from activator.admin import Admin
from activator.certificates import OrderCertificates
from activator.forward import Forwarder, upstream_tls_context
from activator.holds import Holds
from activator.ledger import HoldLedger
from activator.metrics import ActivatorMetrics
from activator.proxy import Proxy
from activator.settings import Settings
from activator.sources import OrderSecrets, Readiness, Upstreams


class Activator:
    def __init__(
        self,
        *,
        settings: Settings,
        secrets: OrderSecrets,
        upstreams: Upstreams,
        readiness: Readiness,
        registry: CollectorRegistry | None = None,
        upstream_tls: ssl.SSLContext | None = None,
    ) -> None:
        self.settings = settings
        self.registry = registry if registry is not None else CollectorRegistry()
        self.metrics = ActivatorMetrics(registry=self.registry)
        self.certificates = OrderCertificates(
            secrets, on_unknown=lambda: self.metrics.refused("unknown_order")
        )
        self.holds = Holds(
            upstreams=upstreams,
            ledger=HoldLedger(per_order=settings.max_held_per_order, total=settings.max_held_total),
            metrics=self.metrics,
            max_hold=settings.max_hold_seconds,
            poll=settings.upstream_poll_seconds,
            retry=settings.upstream_retry_seconds,
        )
        self.forwarder = Forwarder(
            tls=upstream_tls if upstream_tls is not None else upstream_tls_context(settings.upstream_ca_file),
            address_override=settings.upstream_address_override,
            connect_timeout=settings.upstream_connect_timeout_seconds,
            read_timeout=settings.upstream_read_timeout_seconds,
        )
        self.proxy = Proxy(
            settings=settings,
            secrets=secrets,
            holds=self.holds,
            forwarder=self.forwarder,
            metrics=self.metrics,
        )
        self.admin = Admin(
            registry=self.registry, readiness=readiness, header_timeout=settings.header_timeout_seconds
        )
        self._servers: list[asyncio.Server] = []

    async def start(self) -> None:
        """Listen on both ports (port 0: any free one; ``ports`` says which)."""
        s = self.settings
        self._servers = [
            await asyncio.start_server(
                self.proxy.handle,
                s.host,
                s.port,
                ssl=self.certificates.server_context(),
                ssl_handshake_timeout=s.header_timeout_seconds,
                backlog=1024,
            ),
            await asyncio.start_server(self.admin.handle, s.admin_host, s.admin_port),
        ]

    @property
    def ports(self) -> tuple[int, int]:
        """(HTTPS port, admin port) actually bound."""
        proxy, admin = (srv.sockets[0].getsockname()[1] for srv in self._servers)
        return int(proxy), int(admin)

    async def serve_until_signalled(self) -> None:
        """Start, serve until SIGTERM or SIGINT, then stop (held requests are cut)."""
        await self.start()
        logging.getLogger("activator").info("serving orders on :%d, admin on :%d", *self.ports)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        await stop.wait()
        await self.stop()

    async def stop(self) -> None:
        for server in self._servers:
            server.close()
        for server in self._servers:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(server.wait_closed(), 5)
        await self.forwarder.aclose()
        self.certificates.close()
