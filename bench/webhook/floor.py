"""The floor of the webhook's stack: a bare uvicorn ASGI app over the same TLS that answers every
POST with one constant AdmissionReview. No FastAPI, no parsing, no decision.

    python -m bench.webhook.floor --cert-file F --key-file F --port P
"""

from __future__ import annotations

import json
import sys
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from webhook.__main__ import parse_args, tls_server
from webhook.tls import ReloadingCertificate

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]

BODY = json.dumps(
    {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "response": {"uid": "00000000-0000-0000-0000-000000000000", "allowed": True},
    }
).encode()
HEADERS = [(b"content-type", b"application/json"), (b"content-length", str(len(BODY)).encode())]


async def app(
    scope: Scope, receive: Callable[[], Awaitable[Message]], send: Callable[[Message], Awaitable[None]]
) -> None:
    if scope["type"] != "http":
        return
    more = True
    while more:
        message = await receive()
        more = bool(message.get("more_body", False))
    await send({"type": "http.response.start", "status": 200, "headers": HEADERS})
    await send({"type": "http.response.body", "body": BODY})


def main() -> int:
    args = parse_args()
    certificate = ReloadingCertificate(cert_file=args.cert_file, key_file=args.key_file)
    tls_server(app, args, certificate).run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
