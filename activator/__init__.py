"""The activator: holds the requests of an order scaled to zero until a replica is ready, then forwards them.

While an order of a class with ``scaling.minReplicas: 0`` runs no replica, the controller points its
Service at the activator's pods (a selectorless Service with an EndpointSlice of the activator's
addresses). The activator:

- terminates TLS for every order on one listener: the SNI ``<name>.<namespace>.svc`` names the order
  and the order's own ``<name>-tls`` certificate answers (``certificates``); no certificate, no
  handshake;
- refuses (401) a request without the order's token (``<name>-auth``), before counting anything;
- holds a request with the token (``holds``), counted in ``inference_activator_requests_held``, which
  the order's KEDA ScaledObject adds to its query, so the order scales from zero to one;
- forwards the held request to a ready replica over HTTPS, verified as the order against the platform
  CA, and streams the answer back (``forward``, ``proxy``); a forward that fails before any answer
  byte (a replica listed ready that does not listen yet) holds the request again, within its bound.

Why a plain asyncio server with h11 and not uvicorn: the listener needs an ``SSLContext`` whose
``sni_callback`` switches the handshake to the order's context, and the connection's handler then
needs to know which order the handshake chose. uvicorn builds its context from certificate files
(``config.ssl`` can be swapped, as the webhook does, but it never tells the ASGI app which context
served the connection), and its per-request timeouts and size limits are not the ones needed here
(a slow header or body must be cut without a hold). ``asyncio.start_server(ssl=...)`` gives the
``ssl_object`` of each connection, and h11 (already uvicorn's HTTP/1.1 parser) does the parsing with
a bound on the header size. Clients speak HTTP/1.1 only (ALPN ``http/1.1``), one request per
connection: after the answer the connection closes, so the client's next request goes through the
order's Service again, to the order's own replicas once it is awake.

Deliberate limits: every request without the order's token is refused, ``GET /health`` and
``OPTIONS`` included (the runtime's guard lets those two through; here they would wake the order);
only the in-cluster names are served, so a proxy in front (an Ingress) must send the order's
in-cluster host as SNI; HTTP/1.1 only, no WebSocket or other upgrade; held requests live in one
replica's memory and are cut when it stops.

Modules: ``hosts``, ``tokens``, ``ledger``, ``messages``, ``kube_objects``, ``order_book``,
``settings`` and ``sources`` do no I/O (import-linter checks it); ``certificates``, ``http_io``,
``holds``, ``forward``, ``proxy``, ``admin`` and ``app`` do the serving; ``kube_reader`` lists and
watches the API into the ``order_book`` and only ``__main__`` uses it; ``memory`` answers the sources
from memory for the tests.
"""
