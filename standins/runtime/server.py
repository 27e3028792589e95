"""The runtime stand-in's two servers: the HTTPS entry address (an SNI router in front of the stand-in's
own OpenAI-compatible API) and the plain-HTTP control port.

The entry address is one for every order; the order is told by the SNI name of the ClientHello:

- an order routed to real runtimes (``PUT /_standin/routes/...``: a real vLLM process on this machine
  serves it) is passed through: the stand-in peeks at the ClientHello without consuming it, terminates
  no TLS, connects to one of the order's backends (round robin, the next on a refused connection) and
  copies the raw bytes both ways (``standins.runtime.router``), so the client handshakes with the
  real runtime and sees its certificate. An order claimed by a real runtime with no backend ready
  (an empty list) is closed unanswered: the stand-in never pretends to serve an order a real process
  serves. Only ``<order>.<namespace>.svc[.cluster.local]`` names are routed;
- an order at zero is passed through to the activator the same way (raw bytes: the activator
  terminates TLS with the order's certificate) when the order's Service leads to the activator (an
  EndpointSlice labelled with the order, for its Service, managed by the controller,
  ``inference-controller.ai.deckhouse.io``, with a ready endpoint: ``OrderDirectory.service_slices``)
  and the order has no ready backend of its own: no routed backend, no ready pod the stand-in serves
  (of an order no real runtime claimed), and no ready endpoint in a slice of Kubernetes'
  EndpointSlice controller. That last is exactly what makes the activator forward, and it is read
  anew from the API before any connection goes to the activator (the cache may only say "not at
  zero"), so a request the activator forwards back through this address (its
  ``--upstream-address-override``) goes to the order's own backend, never back to the activator. A
  claimed order whose replica is listed ready before its real runtime listens is closed unanswered
  as above; the activator holds the request and tries again;
- every other connection is answered by the stand-in itself, as below.

The stand-in's API (the order is told by ``Host``, which must equal the SNI name the TLS connection was
set up for, else 421 Misdirected Request):

- ``GET /v1/models`` -> ``{"object": "list", "data": [{"id": <served model name>, ...}]}``;
- ``POST /v1/chat/completions``, ``/v1/embeddings``, ``/v1/rerank``: small deterministic answers;
  a chat completion is served as load (``standins.runtime.load``): it waits for a slot on one of the
  order's ready pods (the least loaded; the order's implicit replica when no ready pod is known),
  holds it for the decode time and only then answers; 503 when that replica's queue is full;
- ``GET /health`` -> 200, never with a token;
- ``Authorization: Bearer <token>`` is required when the order has a token (401 otherwise), on the
  paths real vLLM checks (``/v1``, ``/v2``, ``/inference``, ``/cohere``), or on every path but
  ``GET /health`` when the order's runtime loads the token guard (``--middleware
  inference_token_guard.TokenGuard``): never stricter than the real runtime
  (``standins.runtime.orders.needs_token``);
- 404 when no order is known for the host; a fault set for the order answers its status;
- 503 with vLLM's own error when the order's Deployment passes a flag ``vllm serve`` of the image's
  version does not accept (``standins.runtime.vllm_flags``): that runtime would exit at start;
- the certificate for an SNI name is the order's ``<order>-tls`` Secret when it holds one, re-read
  for each new connection (through the directory's cache), as vLLM's ``--enable-ssl-refresh``
  reloads the mounted files (``standins.runtime.endpoint_tls``). Without one (no Secret yet: the
  platform has not issued the order's Certificate), or without SNI, the handshake is refused: the
  stand-in never presents a certificate the platform did not issue, so nothing verifies and the
  order cannot be Ready before its Certificate is.

Control (plain HTTP, loopback):

- ``PUT /_standin/faults/{namespace}/{name}`` ``{"status": 503}`` / ``DELETE`` the same path;
- ``PUT /_standin/orders/{namespace}/{name}`` ``{"model": "...", "token": "...", "guarded": bool, "tls":
  {"cert": PEM, "key": PEM}|null}`` registers an order by hand (no cluster needed; the pair is its
  issued certificate) / ``DELETE`` forgets it;
- ``GET /_standin/requests`` lists the API requests served (host, path, status, the ``serial``
  and ``source`` of the certificate the connection was set up with, and the ``pod`` a chat
  completion ran on: None on the order's implicit replica and for other requests);
- ``GET /_standin/handshakes`` lists the TLS handshakes (SNI ``host``, ``serial``, ``source``, ``ok``,
  and the ``error`` of a refused one, e.g. a client that does not trust the certificate);
- ``PUT /_standin/routes/{namespace}/{name}`` ``{"backends": ["HOST:PORT", ...]}`` routes the order to
  real runtimes (``[]``: claimed, none ready; 400 for a malformed list) / ``DELETE`` gives it back to
  the stand-in; ``GET /_standin/routes`` lists the routes (``backends``, and ``pods``: pod -> backend
  when a backend named its pod).
  A backend may name its pod: ``{"address": "HOST:PORT", "pod": "<pod name>"}`` in place of the
  string; that pod's metrics are then the real process's (below);
- ``PUT /_standin/load`` ``{"slots": 4, "decodeSeconds": 2.0, "queueLimit": 1024}`` (any of them)
  sets the load model for every replica (a new decode time applies to the running requests too);
  ``GET /_standin/load`` shows it;
- ``PUT /_standin/pods/{namespace}/{name}`` ``{"pods": ["<pod>", ...]}`` names the order's ready pods
  by hand (wins over the API; no cluster needed) / ``DELETE`` forgets them;
- ``GET /_standin/metrics/{namespace}/{pod}``: the pod's vLLM metrics in the Prometheus text format,
  what Prometheus scrapes for the pod (its scrape config rewrites each pod target to this port and
  path). ``ControlHandler._metrics`` says what is answered for which pod;
- ``GET /_standin/forwarded`` lists the last 1000 connections passed through, each once it ended
  (SNI ``host``, the ``backend`` or None when none accepted, ``activator``: whether it went to the
  activator, bytes ``up`` to it and ``down`` from it, ``error``).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import socket
import ssl
import sys
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, cast

from devtools.http_json import send_json
from standins.runtime.endpoint_tls import SecretContexts, ServedCert, TlsPair
from standins.runtime.load import Load, LoadConfig
from standins.runtime.metrics import CONTENT_TYPE, exposition
from standins.runtime.orders import OrderDirectory, OrderKey, needs_token, order_key_for_host
from standins.runtime.router import connect_first, parse_backend, peek_sni, splice

_CONTROL = re.compile(r"^/_standin/(faults|orders|routes|pods)/([a-z0-9-]+)/([a-z0-9.-]+)$")
_METRICS = re.compile(r"^/_standin/metrics/([a-z0-9-]{1,63})/([a-z0-9.-]{1,253})$")
FORWARDED_KEPT = 1000
METRICS_TIMEOUT = 5.0  # a scrape's default timeout is 10 s
METRICS_MAX_BYTES = 8 << 20  # vLLM's /metrics is some 100 KiB with its histograms


@dataclass
class RuntimeState:
    """Shared by both servers; guarded by ``lock``."""

    directory: OrderDirectory
    secret_certs: SecretContexts
    faults: dict[OrderKey, int] = field(default_factory=dict)
    requests: list[dict[str, Any]] = field(default_factory=list)
    handshakes: list[dict[str, Any]] = field(default_factory=list)
    routes: dict[OrderKey, list[str]] = field(default_factory=dict)  # HOST:PORT of the real runtimes
    forwarded: list[dict[str, Any]] = field(default_factory=list)  # the last FORWARDED_KEPT
    adopter: str | None = None  # the plane runner's URL: asked about an order before the stand-in answers
    route_pods: dict[OrderKey, dict[str, str]] = field(default_factory=dict)  # pod -> its backend
    load: Load = field(default_factory=Load)  # the replicas of the orders the stand-in serves itself
    lock: threading.Lock = field(default_factory=threading.Lock)
    _turns: dict[OrderKey, int] = field(default_factory=dict)

    def backends_for(self, key: OrderKey) -> list[str] | None:
        """The routed order's backends in the order to try them, each call starting one further
        (round robin); ``[]`` for an order claimed by a real runtime with none ready; None for an
        order the stand-in serves itself."""
        with self.lock:
            backends = self.routes.get(key)
            if not backends:
                return None if backends is None else []
            turn = self._turns.get(key, 0) % len(backends)
            self._turns[key] = turn + 1
        return backends[turn:] + backends[:turn]

    def adopted(self, key: OrderKey) -> bool | None:
        """Whether the plane runner (``PUT /_standin/adopter``) runs the order's pods on a real runtime;
        it claims the order (a route) before it says so. None while the runner has not decided yet
        (the connection is closed unanswered: the stand-in never answers for an order a real runtime
        may serve). False without a runner, or when it does not answer within 10 s (the stand-in
        then answers, as without one)."""
        with self.lock:
            adopter = self.adopter
        if adopter is None:
            return False
        url = f"{adopter.rstrip('/')}/adopts/{key.namespace}/{key.name}"
        try:
            with urllib.request.urlopen(url, timeout=10) as resp:
                verdict = json.loads(resp.read()).get("adopted")
        except (OSError, ValueError):
            return False
        return None if verdict is None else bool(verdict)

    def activator_for(self, key: OrderKey, *, claimed: bool) -> list[str] | None:
        """The activator's addresses when a connection for the order is to go there (the module
        docstring says when), else None; the caller found no routed backend with an address, and
        ``claimed`` says whether a real runtime claims the order (its pods are not the stand-in's)."""
        directory = self.directory
        if not directory.reads_slices:
            return None
        cached = directory.service_slices(key)
        if not cached.activator or cached.own_ready:
            return None  # not at zero (for up to the cache's ttl after it goes there)
        if not claimed and directory.ready_pods(key):
            return None  # the stand-in serves the order's ready pods itself
        slices = directory.service_slices(key, fresh=True)  # never to the activator on a stale read
        if not slices.activator or slices.own_ready:
            return None
        return list(slices.activator)

    def record_forwarded(self, entry: dict[str, Any]) -> None:
        with self.lock:
            self.forwarded.append(entry)
            del self.forwarded[:-FORWARDED_KEPT]

    def certificate_for(self, name: str) -> ServedCert | None:
        """The order's ``<order>-tls`` pair when it has a loadable one; None otherwise (an API
        error included: the handshake is refused and the client tries again)."""
        try:
            view = self.directory.lookup(name)
        except Exception:
            return None
        return self.secret_certs.served_for(view.tls) if view is not None and view.tls else None


class ApiServer(ThreadingHTTPServer):
    """HTTPS: the TLS handshake runs in the connection's own thread, with a certificate per SNI name."""

    daemon_threads = True
    block_on_close = False

    def __init__(self, address: tuple[str, int], state: RuntimeState) -> None:
        super().__init__(address, ApiHandler)
        self.state = state
        # No certificate of its own: each connection gets its order's, chosen by SNI, or none.
        self.tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.tls.minimum_version = ssl.TLSVersion.TLSv1_2
        self.tls.sni_callback = self._on_sni

    def _on_sni(
        self, sock: ssl.SSLObject | ssl.SSLSocket, name: str | None, _ctx: ssl.SSLContext
    ) -> int | None:
        sock.sni_name = name  # type: ignore[union-attr]
        served = self.state.certificate_for(name) if name else None
        if served is None:
            return ssl.ALERT_DESCRIPTION_UNRECOGNIZED_NAME  # no issued certificate: no handshake
        sock.context = served.context
        sock.served = served  # type: ignore[union-attr]
        return None

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that went away mid-answer (a probe cut short by a killed controller) is not an
        error of the stand-in; anything else is reported as usual."""
        if isinstance(sys.exc_info()[1], (ssl.SSLError, ConnectionError)):
            return
        super().handle_error(request, client_address)

    def finish_request(self, request: Any, client_address: Any) -> None:
        if self._forwarded(request):
            return
        try:
            request.settimeout(30)
            tls = self.tls.wrap_socket(request, server_side=True, do_handshake_on_connect=False)
        except OSError:
            return  # the client went away
        try:
            tls.do_handshake()
        except (ssl.SSLError, OSError) as e:
            self._record_handshake(tls, error=e)  # the client refused our certificate, or went away
            tls.close()
            return
        self._record_handshake(tls, error=None)
        try:
            handler: Any = self.RequestHandlerClass
            handler(tls, client_address, self)
        finally:
            with contextlib.suppress(OSError):
                tls.shutdown(socket.SHUT_RDWR)
            tls.close()

    def _forwarded(self, request: socket.socket) -> bool:
        """Pass the connection through to a real runtime when its SNI names a routed order, or to
        the activator when it names an order at zero (True: handled, the connection is done).
        Nothing is peeked while no order is routed and no EndpointSlice can be read; an order
        claimed with no backend ready is closed unanswered: the stand-in never answers for an
        order a real runtime serves."""
        state = self.state
        with state.lock:
            routing = bool(state.routes) or state.adopter is not None
        host = peek_sni(request) if routing or state.directory.reads_slices else None
        key = order_key_for_host(host) if host else None
        if host is None or key is None:
            return False
        backends = state.backends_for(key)
        to_activator = False
        if not backends:
            activator = state.activator_for(key, claimed=backends is not None)
            if activator:
                backends, to_activator = activator, True
        if backends is None:
            verdict = state.adopted(key)
            if verdict is None:
                backends = []  # the runner has not decided yet: closed unanswered
            elif verdict:
                backends = state.backends_for(key) or []  # claimed just now: not ready yet
        if backends is None:
            return False
        entry: dict[str, Any] = {
            "host": host,
            "backend": None,
            "activator": to_activator,
            "up": 0,
            "down": 0,
            "error": None,
        }
        try:
            backend, entry["backend"] = connect_first(backends)
        except OSError as e:
            entry["error"] = str(e)
            self.state.record_forwarded(entry)
            return True
        with backend:
            entry["up"], entry["down"], entry["error"] = splice(request, backend)
        self.state.record_forwarded(entry)
        return True

    def _record_handshake(self, tls: ssl.SSLSocket, *, error: BaseException | None) -> None:
        served: ServedCert | None = getattr(tls, "served", None)
        entry = {
            "host": getattr(tls, "sni_name", None),
            "serial": served.serial if served else None,
            "source": served.source if served else None,
            "ok": error is None,
            "error": None if error is None else f"{type(error).__name__}: {error}",
        }
        with self.state.lock:
            self.state.handshakes.append(entry)


class ApiHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: ApiServer
    server_version = "runtime-standin/1"

    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_GET(self) -> None:
        self._serve("GET")

    def do_POST(self) -> None:
        self._serve("POST")

    def _serve(self, method: str) -> None:
        state = self.server.state
        sni = (getattr(self.connection, "sni_name", None) or "").lower()
        host = (self.headers.get("Host") or "").rsplit(":", 1)[0].lower() or sni
        body = self._body() if method == "POST" else {}
        self._pod: str | None = None
        if sni and host != sni:
            # A connection set up (and verified) for one name, reused for another: RFC 9110 15.5.20.
            message = f"this connection was set up for {sni!r}, not {host!r}"
            status = self._json(421, {"error": {"message": message, "type": "misdirected_request"}})
        else:
            status = self._answer(method, host, body)
        served: ServedCert = self.connection.served  # every connection that got here had its order's
        entry = {
            "method": method,
            "host": host,
            "path": self.path,
            "status": status,
            "serial": served.serial,
            "source": served.source,
            "pod": self._pod,
        }
        with state.lock:
            state.requests.append(entry)

    def _answer(self, method: str, host: str, body: dict[str, Any]) -> int:
        state = self.server.state
        view = state.directory.lookup(host)
        if view is None or view.model is None:
            return self._json(
                404, {"error": {"message": f"no order behind host {host!r}", "type": "not_found"}}
            )
        if view.refused is not None:
            return self._json(503, {"error": {"message": view.refused, "type": "runtime_not_started"}})
        with state.lock:
            fault = state.faults.get(view.key)
        if fault is not None:
            return self._json(
                fault, {"error": {"message": f"injected fault {fault}", "type": "standin_fault"}}
            )
        path = self.path.split("?", 1)[0]
        if (
            view.token is not None
            and needs_token(method, path, guarded=view.guarded)
            and self.headers.get("Authorization") != f"Bearer {view.token}"
        ):
            return self._json(
                401, {"error": {"message": "invalid or missing API key", "type": "unauthorized"}}
            )
        model = view.model
        if method == "GET" and path == "/health":
            return self._json(200, {})
        if method == "GET" and path == "/v1/models":
            entry = {
                "id": model,
                "object": "model",
                "created": 0,
                "owned_by": "runtime-standin",
                "root": model,
            }
            return self._json(200, {"object": "list", "data": [entry]})
        if method == "POST" and path == "/v1/chat/completions":
            return self._generate(view.key, _chat(model, body))
        if method == "POST" and path == "/v1/embeddings":
            return self._json(200, _embeddings(model, body))
        if method == "POST" and path in ("/v1/rerank", "/rerank", "/v2/rerank"):
            return self._json(200, _rerank(model, body))
        return self._json(404, {"error": {"message": f"no route {method} {path}", "type": "not_found"}})

    def _generate(self, key: OrderKey, answer: dict[str, Any]) -> int:
        """Answer ``answer`` as a replica of the order would: once a slot is free on the pod the
        load model chose, and after the decode time (module doc of ``standins.runtime.load``)."""
        load = self.server.state.load
        ticket = load.admit(key, self.server.state.directory.ready_pods(key))
        if ticket is None:
            message = f"the replica's queue is full ({load.config.queue_limit} requests waiting)"
            return self._json(503, {"error": {"message": message, "type": "standin_overloaded"}})
        self._pod = ticket.pod
        try:
            ticket.granted.wait()
            load.hold(time.monotonic())
        except BaseException:
            load.abandon(ticket)
            raise
        usage = answer["usage"]
        load.finish(
            ticket, prompt_tokens=usage["prompt_tokens"], generation_tokens=usage["completion_tokens"]
        )
        return self._json(200, answer)

    def _body(self) -> dict[str, Any]:
        length = int(self.headers.get("Content-Length") or 0)
        try:
            data = json.loads(self.rfile.read(length) or b"{}") if length else {}
        except ValueError:
            return {}
        return data if isinstance(data, dict) else {}

    def _json(self, status: int, doc: Any) -> int:
        return send_json(self, status, doc)


class ControlServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def __init__(self, address: tuple[str, int], state: RuntimeState) -> None:
        super().__init__(address, ControlHandler)
        self.state = state


class ControlHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: ControlServer

    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_PUT(self) -> None:
        if self.path == "/_standin/adopter":
            self._adopter("PUT")
        elif self.path == "/_standin/load":
            self._load()
        else:
            self._control("PUT")

    def do_DELETE(self) -> None:
        if self.path == "/_standin/adopter":
            self._adopter("DELETE")
        else:
            self._control("DELETE")

    def _adopter(self, method: str) -> None:
        """``PUT`` ``{"url": "http://HOST:PORT"}``: the plane runner, asked ``GET <url>/adopts/{ns}/{name}``
        about an order nobody routed yet, before the stand-in answers for it; ``DELETE``: none."""
        url: object = None
        if method == "PUT":
            try:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
            except ValueError as e:
                self._json(400, {"error": f"the body is not JSON: {e}"})
                return
            url = body.get("url") if isinstance(body, dict) else None
            if not isinstance(url, str) or not re.fullmatch(r"http://[0-9a-zA-Z.\[\]:-]+(:\d+)?/?", url):
                self._json(400, {"error": 'the body must be {"url": "http://HOST:PORT"}'})
                return
        with self.server.state.lock:
            self.server.state.adopter = url if isinstance(url, str) else None
        self._json(200, {"adopter": url})

    def do_GET(self) -> None:
        state = self.server.state
        if self.path == "/_standin/requests":
            with state.lock:
                self._json(200, {"requests": list(state.requests)})
        elif self.path == "/_standin/handshakes":
            with state.lock:
                self._json(200, {"handshakes": list(state.handshakes)})
        elif self.path == "/_standin/forwarded":
            with state.lock:
                self._json(200, {"forwarded": list(state.forwarded)})
        elif self.path == "/_standin/routes":
            with state.lock:
                routes = [
                    {"namespace": k.namespace, "name": k.name, "backends": list(v)}
                    | ({"pods": dict(state.route_pods[k])} if state.route_pods.get(k) else {})
                    for k, v in state.routes.items()
                ]
            self._json(200, {"routes": routes})
        elif self.path == "/_standin/load":
            self._json(200, _load_doc(state.load.config))
        elif m := _METRICS.match(self.path):
            self._metrics(m.group(1), m.group(2))
        else:
            self._json(404, {"error": "unknown control route"})

    def _load(self) -> None:
        """``PUT /_standin/load`` ``{"slots": N, "decodeSeconds": S, "queueLimit": Q}``: any of them;
        400 for a bad value."""
        load = self.server.state.load
        try:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
            if not isinstance(body, dict) or set(body) - {"slots", "decodeSeconds", "queueLimit"}:
                raise ValueError(
                    'the body must be {"slots": N, "decodeSeconds": S, "queueLimit": Q} (any of them)'
                )
            now = load.config
            slots, decode, limit = (
                body.get("slots", now.slots),
                body.get("decodeSeconds", now.decode_seconds),
                body.get("queueLimit", now.queue_limit),
            )
            number = isinstance(decode, (int, float)) and not isinstance(decode, bool)
            if not (_is_int(slots) and _is_int(limit) and number):
                raise ValueError("slots and queueLimit are integers, decodeSeconds a number")
            config = LoadConfig(slots=slots, decode_seconds=float(decode), queue_limit=limit)
        except ValueError as e:
            self._json(400, {"error": str(e)})
            return
        load.configure(config)
        self._json(200, _load_doc(config))

    def _metrics(self, namespace: str, pod: str) -> None:
        """``GET /_standin/metrics/{namespace}/{pod}``: what a scrape of the pod's ``/metrics`` gets.

        - A pod a real runtime serves (a route's backend names it): the real vLLM's own ``/metrics``
          text, unchanged, fetched from ``https://<backend>/metrics`` with the order's token (the
          token guard checks every path but ``GET /health``). TLS is not verified: the backend is a
          process on this machine whose address the plane runner registered on this loopback
          control port, the connection never leaves the host, and its certificate names the
          order's host, not the loopback address. Within 5 s and 8 MiB or 503: the target is down
          for Prometheus, never invented numbers.
        - A pod of an order a real runtime serves but with no ready process registered: 503 (there
          is no process to ask; a real pod not ready cannot be scraped either).
        - A pod of an order the stand-in serves (its order label, read through the API, or a
          registration of the order's pods): that replica's numbers from the load model, 200; zeros
          for a pod that has had no request, which is the truth for an idle replica (a pod of the
          order that is not Ready gets no request, so it shows zeros too).
        - Anything else (no such pod, a pod without the order label, a multi-node group's worker,
          which runs no API server, an order the stand-in does not know): 404, so a target nobody serves is not scraped as an idle replica; 503 when the API
          cannot be read.
        """
        state = self.server.state
        with state.lock:
            routed = next(
                (
                    (k, pods[pod])
                    for k, pods in state.route_pods.items()
                    if k.namespace == namespace and pod in pods
                ),
                None,
            )
        try:
            if routed is not None:
                self._proxy_metrics(routed[0], routed[1])
                return
            key = state.directory.order_of_pod(namespace, pod)
            if key is None:
                self._json(404, {"error": f"no pod {namespace}/{pod} of an order is known"})
                return
            with state.lock:
                claimed = key in state.routes
            if claimed:
                message = f"pod {namespace}/{pod}: its order is served by a real runtime, and no ready process of this pod is registered"
                self._json(503, {"error": message})
                return
            view = state.directory.lookup(f"{key.name}.{key.namespace}.svc")
        except Exception as e:  # the API cannot be read: the stand-in cannot tell
            self._json(503, {"error": f"{type(e).__name__}: {e}"})
            return
        if view is None or view.model is None:
            self._json(404, {"error": f"pod {namespace}/{pod}: no order {key.namespace}/{key.name} is known"})
            return
        self._text(200, exposition(view.model, state.load.pod_load(key, pod)), CONTENT_TYPE)

    def _proxy_metrics(self, key: OrderKey, backend: str) -> None:
        view = self.server.state.directory.lookup(f"{key.name}.{key.namespace}.svc")
        token = view.token if view is not None else None
        req = urllib.request.Request(f"https://{backend}/metrics")
        if token is not None:
            req.add_header("Authorization", f"Bearer {token}")
        tls = ssl.create_default_context()
        tls.check_hostname = False
        tls.verify_mode = ssl.CERT_NONE  # loopback, registered by the plane runner: see _metrics
        try:
            with urllib.request.urlopen(req, timeout=METRICS_TIMEOUT, context=tls) as resp:
                raw = resp.read(METRICS_MAX_BYTES + 1)
                content_type = resp.headers.get("Content-Type") or CONTENT_TYPE
        except (OSError, ValueError) as e:  # HTTPError (a non-2xx answer) and timeouts are OSErrors
            self._json(503, {"error": f"the real runtime at {backend} gave no metrics: {e}"})
            return
        if len(raw) > METRICS_MAX_BYTES:
            self._json(
                503, {"error": f"the real runtime at {backend} sent more than {METRICS_MAX_BYTES} bytes"}
            )
            return
        self._text(200, raw, content_type)

    def _text(self, status: int, raw: bytes, content_type: str) -> None:
        """The answer; a scraper that gave up meanwhile (its timeout is shorter than a busy real
        runtime's ``/metrics`` here) is let go without a traceback."""
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _control(self, method: str) -> None:
        state = self.server.state
        m = _CONTROL.match(self.path)
        if not m:
            self._json(404, {"error": "unknown control route"})
            return
        what, key = m.group(1), OrderKey(namespace=m.group(2), name=m.group(3))
        length = int(self.headers.get("Content-Length") or 0)
        try:
            body = json.loads(self.rfile.read(length) or b"{}") if length else {}
        except ValueError as e:
            self._json(400, {"error": f"the body is not JSON: {e}"})
            return
        if what == "routes":
            self._route(method, key, body)
            return
        if what == "pods":
            self._pods(method, key, body)
            return
        if what == "faults":
            with state.lock:
                if method == "PUT":
                    state.faults[key] = int(body.get("status", 503))
                else:
                    state.faults.pop(key, None)
        elif method == "PUT":
            tls = body.get("tls")
            pair = TlsPair(tls["cert"].encode(), tls["key"].encode()) if tls else None
            state.directory.register(
                key,
                token=body.get("token"),
                model=str(body["model"]),
                tls=pair,
                guarded=bool(body.get("guarded", False)),
            )
        else:
            state.directory.unregister(key)
        self._json(200, {"namespace": key.namespace, "name": key.name})

    def _pods(self, method: str, key: OrderKey, body: Any) -> None:
        """``PUT`` ``{"pods": ["<pod>", ...]}``: the order's ready pods (400 on a bad list);
        ``DELETE``: the API says again."""
        directory = self.server.state.directory
        if method == "DELETE":
            directory.unregister_pods(key)
            self._json(200, {"namespace": key.namespace, "name": key.name})
            return
        pods = body.get("pods") if isinstance(body, dict) else None
        if not isinstance(pods, list) or not all(
            isinstance(p, str) and re.fullmatch(r"[a-z0-9.-]{1,253}", p) for p in pods
        ):
            self._json(400, {"error": 'the body must be {"pods": ["<pod name>", ...]} (a list, maybe empty)'})
            return
        directory.register_pods(key, pods)
        self._json(200, {"namespace": key.namespace, "name": key.name, "pods": pods})

    def _route(self, method: str, key: OrderKey, body: Any) -> None:
        """``PUT`` ``{"backends": ["HOST:PORT" | {"address": "HOST:PORT", "pod": "<pod>"}, ...]}``
        routes the order to real runtimes (400 on a bad list); ``DELETE`` gives it back to the
        stand-in."""
        state = self.server.state
        if method == "DELETE":
            with state.lock:
                state.routes.pop(key, None)
                state.route_pods.pop(key, None)
            self._json(200, {"namespace": key.namespace, "name": key.name})
            return
        try:
            backends, pods = _backends(body)
        except ValueError as e:
            self._json(400, {"error": str(e)})
            return
        with state.lock:
            state.routes[key] = backends
            state.route_pods[key] = pods
        self._json(200, {"namespace": key.namespace, "name": key.name, "backends": backends, "pods": pods})

    def _json(self, status: int, doc: Any) -> None:
        send_json(self, status, doc)


def _backends(body: Any) -> tuple[list[str], dict[str, str]]:
    """A route's body -> (its backends, pod -> backend for those that name their pod); ValueError
    with the reason."""
    backends = body.get("backends") if isinstance(body, dict) else None
    if not isinstance(backends, list):
        raise ValueError(
            'the body must be {"backends": ["HOST:PORT" | {"address": "HOST:PORT", "pod": "<pod>"}, ...]}'
            " (a list, maybe empty)"
        )
    addresses: list[str] = []
    pods: dict[str, str] = {}
    for backend in backends:
        if isinstance(backend, dict):
            address, pod = backend.get("address"), backend.get("pod")
            if set(backend) != {"address", "pod"} or not isinstance(pod, str):
                raise ValueError(
                    f'a backend object is {{"address": "HOST:PORT", "pod": "<pod>"}}, not {backend!r}'
                )
            if not re.fullmatch(r"[a-z0-9.-]{1,253}", pod):
                raise ValueError(f"backend {backend!r}: {pod!r} is not a pod name")
            parse_backend(address)
            pods[pod] = str(address)
            addresses.append(str(address))
        else:
            parse_backend(backend)
            addresses.append(str(backend))
    return addresses, pods


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _load_doc(config: LoadConfig) -> dict[str, Any]:
    return {"slots": config.slots, "decodeSeconds": config.decode_seconds, "queueLimit": config.queue_limit}


def _chat(model: str, body: dict[str, Any]) -> dict[str, Any]:
    messages = body.get("messages") or []
    last = str(messages[-1].get("content", "")) if messages and isinstance(messages[-1], dict) else ""
    text = f"(runtime stand-in for {model}) You said: {last[:200]}"
    return {
        "id": "chatcmpl-standin",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {
            "prompt_tokens": len(last.split()),
            "completion_tokens": len(text.split()),
            "total_tokens": 0,
        },
    }


def _vector(text: str, dim: int = 8) -> list[float]:
    digest = hashlib.sha256(text.encode()).digest()
    return [round((b - 128) / 128, 4) for b in digest[:dim]]


def _embeddings(model: str, body: dict[str, Any]) -> dict[str, Any]:
    inputs = body.get("input", "")
    texts = [inputs] if isinstance(inputs, str) else [str(t) for t in inputs]
    data = [{"object": "embedding", "index": i, "embedding": _vector(t)} for i, t in enumerate(texts)]
    return {"object": "list", "model": model, "data": data, "usage": {"prompt_tokens": 0, "total_tokens": 0}}


def _rerank(model: str, body: dict[str, Any]) -> dict[str, Any]:
    query = set(str(body.get("query", "")).lower().split())
    docs = [str(d) for d in body.get("documents") or []]
    scored = [
        {
            "index": i,
            "relevance_score": len(query & set(d.lower().split())) / (len(query) or 1),
            "document": {"text": d},
        }
        for i, d in enumerate(docs)
    ]
    scored.sort(key=lambda r: -cast(float, r["relevance_score"]))
    return {"id": "rerank-standin", "model": model, "results": scored}


__all__ = ["ApiServer", "ControlServer", "RuntimeState", "order_key_for_host"]
