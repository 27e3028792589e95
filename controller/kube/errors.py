"""Typed API errors, built from the API server's ``Status`` answer, carrying its message.

Callers catch what they can act on: ``NotFound`` (gone: nothing to do), ``Conflict`` (stale
resourceVersion: re-read and retry), ``AlreadyExists``, ``Forbidden`` (RBAC), ``Invalid`` (the object
is wrong: retrying does not help), ``Gone`` (a watch's resourceVersion is too old: relist) and
``ApiUnavailable`` (no connection, 5xx, 429: retry later)."""

from __future__ import annotations

import json
from typing import Any


class KubeError(Exception):
    """An API request failed. ``status`` is the HTTP status (0: no answer); ``reason`` the Status reason."""

    def __init__(self, message: str, *, status: int, reason: str = "", details: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.reason = reason
        self.details = details


class NotFound(KubeError):  # noqa: N818 - the API server's own names
    pass


class AlreadyExists(KubeError):  # noqa: N818 - the API server's own names
    pass


class Conflict(KubeError):  # noqa: N818 - the API server's own names
    pass


class Forbidden(KubeError):  # noqa: N818 - the API server's own names
    pass


class Invalid(KubeError):  # noqa: N818 - the API server's own names
    pass


class Gone(KubeError):  # noqa: N818 - the API server's own names
    pass


class ApiUnavailable(KubeError):  # noqa: N818 - the API server's own names
    pass


def error_from_status(status: int, body: Any, *, what: str) -> KubeError:
    """The typed error for an HTTP status and a (decoded) ``Status`` object."""
    doc = body if isinstance(body, dict) else {}
    reason = str(doc.get("reason") or "")
    message = str(doc.get("message") or (body if isinstance(body, str) and body else "")) or f"HTTP {status}"
    text = f"{what}: {message}"
    kw: dict[str, Any] = {"status": status, "reason": reason, "details": doc.get("details")}
    if status == 404:
        return NotFound(text, **kw)
    if status == 409:
        return AlreadyExists(text, **kw) if reason == "AlreadyExists" else Conflict(text, **kw)
    if status in (401, 403):
        return Forbidden(text, **kw)
    if status in (400, 422):
        return Invalid(text, **kw)
    if status == 410:
        return Gone(text, **kw)
    if status == 0 or status == 429 or status >= 500:
        return ApiUnavailable(text, **kw)
    return KubeError(text, **kw)


def error_from_response(status: int, raw: bytes, *, what: str) -> KubeError:
    try:
        body: Any = json.loads(raw) if raw else None
    except ValueError:
        body = raw.decode(errors="replace").strip()
    return error_from_status(status, body, what=what)
