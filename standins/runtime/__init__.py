"""The runtime stand-in: one HTTPS address answering for many orders at once, by the stand-in's own
OpenAI-compatible server or, for the orders a real runtime serves, by that runtime (TLS passthrough).

Real GPU runtimes mostly cannot run here. The controller's probe is pointed at this one address by
the module setting ``probeAddressOverride`` and sends each order's endpoint host as SNI. An order
routed to real vLLM processes on this machine (``RunningRuntime.route``) is passed through to one of
them untouched: the client handshakes with the real runtime and sees its own certificate; the
stand-in terminates no TLS and never answers for such an order, not even while none of its
processes is ready (the connection is closed). An order at zero whose Service leads to the activator
(the controller's ``<order>-activator`` EndpointSlice) and that has no ready replica of its own is
passed through to the activator the same way (``standins.runtime.server`` says exactly when).

For every other order the stand-in presents the order's own certificate from its ``<order>-tls``
Secret (reloaded when the Secret changes, as vLLM's ``--enable-ssl-refresh`` does) and, while the
platform has issued none, refuses the handshake; it checks the order's token from its
``<order>-auth`` Secret, and lists the order's model. Its chat completions are served as load on
the order's pods (``standins.runtime.load``), and each pod's vLLM metrics are published on the
control port for Prometheus (``GET /_standin/metrics/{namespace}/{pod}``): the load model's numbers
for a pod the stand-in plays, the real vLLM's own ``/metrics`` for a pod a real process serves.
Start it with ``python -m standins.runtime``
or in-process with ``start_runtime()``. Its HTTP routes and control API are described in
``standins.runtime.server``.
"""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from dataclasses import dataclass

from standins.runtime.certs import make_ca, make_server_pair
from standins.runtime.endpoint_tls import SecretContexts, TlsPair
from standins.runtime.load import DEFAULT_DECODE_SECONDS, DEFAULT_QUEUE_LIMIT, DEFAULT_SLOTS, Load, LoadConfig
from standins.runtime.orders import OrderDirectory, OrderKey
from standins.runtime.server import ApiServer, ControlServer, RuntimeState

__all__ = ["RunningRuntime", "make_ca", "make_server_pair", "start_runtime"]


@dataclass
class RunningRuntime:
    """A runtime stand-in serving on threads; ``stop()`` closes it (also a context manager)."""

    url: str  # https://HOST:PORT
    control_url: str  # http://HOST:PORT
    state: RuntimeState
    _servers: tuple[ApiServer, ControlServer]
    _threads: tuple[threading.Thread, threading.Thread]

    @property
    def address(self) -> str:
        """``HOST:PORT`` of the HTTPS server: the value of the ``probeAddressOverride`` setting."""
        return self.url.removeprefix("https://")

    def set_fault(self, namespace: str, name: str, status: int) -> None:
        self._control("PUT", f"/_standin/faults/{namespace}/{name}", {"status": status})

    def clear_fault(self, namespace: str, name: str) -> None:
        self._control("DELETE", f"/_standin/faults/{namespace}/{name}", None)

    def register(
        self,
        namespace: str,
        name: str,
        *,
        model: str,
        token: str | None,
        tls: tuple[bytes, bytes] | None,
        guarded: bool = False,
    ) -> None:
        """Answer for an order without reading the cluster (a registration wins over the API);
        ``tls`` is its issued certificate and key (PEM), None for an order not issued one yet;
        ``guarded``: its runtime loads the token guard (the token on every path but ``GET /health``)."""
        pair = TlsPair(*tls) if tls else None
        self.state.directory.register(
            OrderKey(namespace, name), token=token, model=model, tls=pair, guarded=guarded
        )

    def route(
        self, namespace: str, name: str, backends: list[str], *, pods: dict[str, str] | None = None
    ) -> None:
        """Pass the order's connections through to real runtimes at ``HOST:PORT`` (TLS passthrough,
        round robin); ``[]``: a real runtime claims the order but none is ready (connections are
        closed). ``pods``: pod name -> its backend (also routed), whose metrics are that process's.
        ValueError for a malformed backend."""
        named: list[object] = [*backends, *({"address": a, "pod": p} for p, a in (pods or {}).items())]
        try:
            self._control("PUT", f"/_standin/routes/{namespace}/{name}", {"backends": named})
        except urllib.error.HTTPError as e:
            if e.code != 400:
                raise
            raise ValueError(json.loads(e.read())["error"]) from None

    def unroute(self, namespace: str, name: str) -> None:
        """The stand-in answers for the order itself again."""
        self._control("DELETE", f"/_standin/routes/{namespace}/{name}", None)

    def set_load(
        self, *, slots: int | None = None, decode_seconds: float | None = None, queue_limit: int | None = None
    ) -> None:
        """``PUT /_standin/load``: the replicas' slots, decode time and queue bound (None: unchanged)."""
        body = {"slots": slots, "decodeSeconds": decode_seconds, "queueLimit": queue_limit}
        self._control("PUT", "/_standin/load", {k: v for k, v in body.items() if v is not None})

    def set_pods(self, namespace: str, name: str, pods: list[str]) -> None:
        """Name the order's ready pods by hand (``PUT /_standin/pods/...``; wins over the API)."""
        self._control("PUT", f"/_standin/pods/{namespace}/{name}", {"pods": pods})

    def clear_pods(self, namespace: str, name: str) -> None:
        self._control("DELETE", f"/_standin/pods/{namespace}/{name}", None)

    def metrics(self, namespace: str, pod: str) -> str:
        """What Prometheus scrapes for the pod (``GET /_standin/metrics/...``); HTTPError otherwise."""
        url = f"{self.control_url}/_standin/metrics/{namespace}/{pod}"
        with urllib.request.urlopen(url, timeout=10) as resp:
            return str(resp.read().decode())

    def forwarded(self) -> list[dict[str, object]]:
        """The last connections passed through to real runtimes or the activator (``GET
        /_standin/forwarded``): ``host``, ``backend`` (None when none accepted), ``activator``
        (whether it went there), bytes ``up`` and ``down``, ``error``."""
        return self._list("forwarded")

    def routes(self) -> list[dict[str, object]]:
        """The orders routed to real processes (``GET /_standin/routes``): ``namespace``, ``name``,
        ``backends`` (the ready processes' addresses) and ``pods`` (pod -> backend, when named)."""
        return self._list("routes")

    def requests(self) -> list[dict[str, object]]:
        """The API requests served so far (``GET /_standin/requests``)."""
        return self._list("requests")

    def handshakes(self) -> list[dict[str, object]]:
        """The TLS handshakes so far, refused ones included (``GET /_standin/handshakes``)."""
        return self._list("handshakes")

    def _list(self, what: str) -> list[dict[str, object]]:
        with urllib.request.urlopen(f"{self.control_url}/_standin/{what}", timeout=10) as resp:
            doc = json.loads(resp.read())
        return list(doc[what])

    def _control(self, method: str, path: str, body: object) -> None:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.control_url + path, data=data, method=method)
        req.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(req, timeout=10) as resp:
            resp.read()

    def stop(self) -> None:
        for server in self._servers:
            server.shutdown()
            server.server_close()
        for thread in self._threads:
            thread.join(timeout=5)
        self.state.directory.close()
        self.state.secret_certs.close()

    def __enter__(self) -> RunningRuntime:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start_runtime(
    *,
    kubeconfig: str | None = None,
    host: str = "127.0.0.1",
    port: int = 0,
    control_port: int = 0,
    cache_seconds: float = 2.0,
    slots: int = DEFAULT_SLOTS,
    decode_seconds: float = DEFAULT_DECODE_SECONDS,
    queue_limit: int = DEFAULT_QUEUE_LIMIT,
) -> RunningRuntime:
    """Serve the stand-in's HTTPS API and control port (0: free ports) on daemon threads; ``slots``,
    ``decode_seconds`` and ``queue_limit`` set the load model (``standins.runtime.load``)."""
    state = RuntimeState(
        directory=OrderDirectory(kubeconfig=kubeconfig, ttl=cache_seconds),
        secret_certs=SecretContexts(),
        load=Load(LoadConfig(slots=slots, decode_seconds=decode_seconds, queue_limit=queue_limit)),
    )
    api = ApiServer((host, port), state)
    control = ControlServer((host, control_port), state)
    threads = tuple(
        threading.Thread(target=s.serve_forever, name=f"runtime-standin-{n}", daemon=True)
        for n, s in (("api", api), ("control", control))
    )
    for t in threads:
        t.start()
    a_host, a_port = api.server_address[:2]
    c_host, c_port = control.server_address[:2]
    return RunningRuntime(
        f"https://{a_host!s}:{a_port}",
        f"http://{c_host!s}:{c_port}",
        state,
        (api, control),
        (threads[0], threads[1]),
    )
