"""One JSON answer of a ``BaseHTTPRequestHandler``: the small local servers' (the runtime stand-in's
API and control ports, the plane runner's question port) shared way to reply."""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler
from typing import Any


def send_json(handler: BaseHTTPRequestHandler, status: int, doc: Any) -> int:
    """``doc`` as the JSON body of a ``status`` answer with its length; returns ``status``."""
    raw = json.dumps(doc).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(raw)))
    handler.end_headers()
    handler.wfile.write(raw)
    return status
