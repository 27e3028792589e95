"""The activator's own answers and the header rules of a proxy. Pure.

Error bodies are shaped as the runtime's: vLLM's authentication middleware answers 401 with
``{"error": "Unauthorized"}`` (so does the token guard), and its other errors with an OpenAI-style
``{"error": {"message", "type", "param", "code"}}``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass

Headers = list[tuple[bytes, bytes]]

HOP_BY_HOP = frozenset(
    {
        b"connection",
        b"keep-alive",
        b"proxy-authenticate",
        b"proxy-authorization",
        b"proxy-connection",
        b"te",
        b"trailer",
        b"transfer-encoding",
        b"upgrade",
    }
)
"""RFC 9110 7.6.1: meant for one connection, never forwarded (with any header ``Connection`` names)."""

_REASONS = {
    400: "Bad Request",
    401: "Unauthorized",
    408: "Request Timeout",
    413: "Content Too Large",
    431: "Request Header Fields Too Large",
    502: "Bad Gateway",
    503: "Service Unavailable",
}


@dataclass(frozen=True, slots=True)
class Answer:
    """A complete response the activator gives itself (never a forwarded one)."""

    status: int
    body: bytes
    headers: Headers

    @property
    def reason(self) -> bytes:
        return _REASONS.get(self.status, "").encode()


def unauthorized() -> Answer:
    return Answer(401, json.dumps({"error": "Unauthorized"}).encode(), [(b"www-authenticate", b"Bearer")])


def error(status: int, message: str, *, retry_after: int | None = None) -> Answer:
    """An OpenAI-style error; with ``retry_after`` (seconds) a ``Retry-After`` header too."""
    kind = "BadRequestError" if status < 500 else "ServiceUnavailableError"
    body = json.dumps({"error": {"message": message, "type": kind, "param": None, "code": status}}).encode()
    headers: Headers = []
    if retry_after is not None:
        headers.append((b"retry-after", str(retry_after).encode()))
    return Answer(status, body, headers)


def response_headers(answer: Answer) -> Headers:
    """The full header list of one of our answers (the connection is closed after it)."""
    return [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(answer.body)).encode()),
        *answer.headers,
        (b"connection", b"close"),
    ]


def forwardable(headers: Iterable[tuple[bytes, bytes]], *, drop: Iterable[bytes] = ()) -> Headers:
    """``headers`` without the hop-by-hop ones, those ``Connection`` names, and ``drop`` (lower-case)."""
    pairs = [(k.lower(), v) for k, v in headers]
    named = {
        token.strip().lower().encode()
        for k, v in pairs
        if k == b"connection"
        for token in v.decode("latin-1").split(",")
    }
    skip = HOP_BY_HOP | named | set(drop)
    return [(k, v) for k, v in pairs if k not in skip]


VIA_NAME = b"inference-activator"
VIA = b"1.1 " + VIA_NAME
"""What a forward adds to the request's ``Via`` (RFC 9110 7.6.3): a request that comes back carrying it
has looped through the activator (an entry address that sent it to the activator again)."""


def looped(headers: Iterable[tuple[bytes, bytes]]) -> bool:
    """Whether a ``Via`` header names the activator as a proxy the request already went through."""
    for k, v in headers:
        if k.lower() == b"via":
            for hop in v.split(b","):
                if hop.split()[1:2] == [VIA_NAME]:
                    return True
    return False


def header(headers: Iterable[tuple[bytes, bytes]], name: bytes) -> bytes | None:
    """The first value of header ``name`` (lower-case), or None."""
    for k, v in headers:
        if k.lower() == name:
            return v
    return None


def wants_stream(body: bytes) -> bool:
    """Whether a JSON body asks for a streamed answer (``"stream": true``); anything else is False."""
    if b'"stream"' not in body:
        return False
    try:
        parsed = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return False
    return isinstance(parsed, dict) and parsed.get("stream") is True
