"""``/healthz``, ``/readyz`` and ``/metrics`` over stdlib HTTP, each server in its own thread.

``/healthz`` answers 200 while the process runs (and ``alive()`` holds); ``/readyz`` answers 200 once
``ready()`` holds (for the controller: every informer has synced, whether this replica leads or stands
by) and 503 before. ``/metrics`` serves the Prometheus registry. A port of 0 turns its server off; when
both ports are equal, one server answers all three paths.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest

log = logging.getLogger(__name__)

Route = Callable[[], tuple[int, str, bytes]]


def _always() -> bool:
    return True


def _handler(routes: dict[str, Route]) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            route = routes.get(self.path.split("?", 1)[0])
            code, ctype, body = route() if route else (404, "text/plain", b"not found\n")
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            log.debug("%s %s", self.address_string(), format % args)

    return Handler


class HealthServer:
    def __init__(
        self,
        *,
        registry: CollectorRegistry,
        metrics_port: int,
        health_port: int,
        bind_address: str = "0.0.0.0",
        ready: Callable[[], bool],
        alive: Callable[[], bool] = _always,
    ) -> None:
        self.registry = registry
        self.metrics_port = metrics_port
        self.health_port = health_port
        self.bind_address = bind_address
        self.ready = ready
        self.alive = alive
        self._servers: list[ThreadingHTTPServer] = []

    def _check(self, check: Callable[[], bool], what: str) -> tuple[int, str, bytes]:
        try:
            ok = check()
        except Exception:
            log.exception("%s check failed", what)
            ok = False
        return (200, "text/plain", b"ok\n") if ok else (503, "text/plain", f"not {what}\n".encode())

    def _metrics(self) -> tuple[int, str, bytes]:
        return 200, CONTENT_TYPE_LATEST, generate_latest(self.registry)

    def routes(self) -> dict[int, dict[str, Route]]:
        """Paths served on each enabled port."""
        out: dict[int, dict[str, Route]] = {}
        if self.health_port:
            out.setdefault(self.health_port, {}).update(
                {
                    "/healthz": lambda: self._check(self.alive, "alive"),
                    "/readyz": lambda: self._check(self.ready, "ready"),
                }
            )
        if self.metrics_port:
            out.setdefault(self.metrics_port, {})["/metrics"] = self._metrics
        return out

    def start(self) -> None:
        for port, routes in self.routes().items():
            server = ThreadingHTTPServer((self.bind_address, port), _handler(routes))
            server.daemon_threads = True
            threading.Thread(target=server.serve_forever, name=f"http-{port}", daemon=True).start()
            self._servers.append(server)
            log.info("serving %s on %s:%d", ", ".join(sorted(routes)), self.bind_address, port)

    def stop(self) -> None:
        for server in self._servers:
            server.shutdown()
            server.server_close()
        self._servers.clear()
