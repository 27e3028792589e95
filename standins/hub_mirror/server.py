"""The HTTP side of the HF mirror stand-in: what huggingface_hub asks, answered from ``repos``.

Routes (see /work/shared/spec/hub-protocol.md):

- ``GET /api/models/{owner}/{name}[/revision/{rev}]`` model info, ``?blobs=True`` adds file sizes;
- ``GET /api/models/{owner}/{name}/tree/{rev}[/{path}][?recursive=true]`` the file listing that
  ``snapshot_download`` of huggingface_hub 1.x+ (and so ``hf download``) starts with: folders, then
  files with ``oid``, ``size`` and ``lfs``. As on the Hub it comes in pages of at most ``tree_page``
  entries (1000 on the Hub; 50 with ``expand=true``): a page that is not the last carries
  ``Link: <URL>; rel="next"``, an absolute URL with the same query and an opaque ``cursor`` parameter,
  which huggingface_hub follows as given (``paginate``). A cursor the mirror did not issue answers 400;
- ``HEAD``/``GET /{owner}/{name}/resolve/{rev}/{path}`` files, with ``Range`` (206);
- errors typed by ``X-Error-Code``: RepoNotFound (404), RevisionNotFound (404), EntryNotFound (404),
  GatedRepo (401 without a token, 403 with a token that has no access).

Model info is public even for gated repositories, as on the Hub; their files need
``Authorization: Bearer <token>`` with one of the mirror's tokens. Any other token is ignored on
public repositories.

Control routes for tests, outside the Hub protocol:

- ``POST /_mirror/faults`` ``{"status": 503, "match": "<substring of the path>"}`` makes every Hub
  request (or those whose path contains ``match``) answer that status until ``DELETE /_mirror/faults``;
  ``"retryAfter": "2"`` (seconds or an HTTP date) adds a ``Retry-After`` header to the fault, and
  ``"times": n`` answers only the next n matching requests with it (then the fault clears itself);
- ``GET /_mirror/requests`` lists the Hub requests served so far; ``DELETE`` clears the list.

**Throttle** (``throttle`` bytes per second, ``None``: as fast as it can): each file body is sent
at most that fast, per response, so a download takes long enough for a test to watch it progress.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, parse_qsl, unquote, urlencode, urlsplit

from standins.hub_mirror.repos import Repo

DEFAULT_TOKEN = "hf_mirror_test_token"
"""The token the mirror accepts for gated repositories unless told otherwise (tests only)."""

TREE_PAGE = 1000
"""Entries per page of a tree listing on the Hub (huggingface_hub's ``_iter_repo_tree_pages``)."""
TREE_PAGE_EXPAND = 50
"""Entries per page of a tree listing with ``expand=true`` on the Hub."""

_INFO = re.compile(r"^/api/models/([^/]+/[^/]+?)(?:/revision/(.+))?/?$")
_TREE = re.compile(r"^/api/models/([^/]+/[^/]+)/tree/([^/]+)(?:/(.*))?$")
_RESOLVE = re.compile(r"^/([^/]+/[^/]+)/resolve/([^/]+)/(.+)$")
_RANGE = re.compile(r"^bytes=(\d*)-(\d*)$")


@dataclass(frozen=True, slots=True)
class Request:
    """One Hub request the mirror served (control requests are not recorded)."""

    method: str
    path: str
    kind: str  # model_info | tree | file_head | file_get | file_range | other
    status: int
    authorized: bool  # whether it carried a Bearer token the mirror accepts
    at: float = field(default_factory=time.monotonic)  # when it was answered (monotonic seconds)


@dataclass
class MirrorState:
    """What the mirror serves and what tests can change while it runs. Guarded by ``lock``."""

    repos: dict[str, Repo]
    tokens: frozenset[str]
    fault_status: int | None = None
    fault_match: str = ""
    fault_retry_after: str | None = None
    fault_times: int | None = None  # matching requests left to fail; None: until cleared
    requests: list[Request] = field(default_factory=list)
    throttle: float | None = None  # bytes per second of each file body; None: unthrottled
    tree_page: int = TREE_PAGE  # entries per page of a tree listing (expand=true: at most TREE_PAGE_EXPAND)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, request: Request) -> None:
        with self.lock:
            self.requests.append(request)

    def set_fault(
        self, status: int | None, match: str = "", retry_after: str | None = None, times: int | None = None
    ) -> None:
        with self.lock:
            self.fault_status, self.fault_match = status, match
            self.fault_retry_after, self.fault_times = retry_after, times

    def fault_for(self, path: str) -> tuple[int, str | None] | None:
        """The status and Retry-After this request answers with, when a fault matches it."""
        with self.lock:
            if self.fault_status is None or self.fault_match not in path:
                return None
            fault = (self.fault_status, self.fault_retry_after)
            if self.fault_times is not None:
                self.fault_times -= 1
                if self.fault_times <= 0:
                    self.fault_status, self.fault_match = None, ""
                    self.fault_retry_after, self.fault_times = None, None
            return fault


class MirrorServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def __init__(self, address: tuple[str, int], state: MirrorState) -> None:
        super().__init__(address, MirrorHandler)
        self.state = state


class MirrorHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: MirrorServer
    server_version = "hf-mirror-standin/1"
    _record: tuple[str, str, str, bool] | None = None  # the Hub request being answered, until recorded

    def log_message(self, format: str, *args: Any) -> None:  # quiet: tests read the request list
        return

    # ---- dispatch

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_HEAD(self) -> None:
        self._dispatch("HEAD")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_DELETE(self) -> None:
        self._dispatch("DELETE")

    def _dispatch(self, method: str) -> None:
        url = urlsplit(self.path)
        path = url.path
        self._record = None
        if path.startswith("/_mirror/"):
            self._control(method, path)
            return
        state = self.server.state
        kind = "other"
        info = _INFO.match(path)
        tree = _TREE.match(path)
        resolve = _RESOLVE.match(path)
        if info and method == "GET":
            kind = "model_info"
        elif tree and method == "GET":
            kind = "tree"
        elif resolve and method in ("GET", "HEAD"):
            ranged = bool(self.headers.get("Range"))
            kind = "file_head" if method == "HEAD" else ("file_range" if ranged else "file_get")
        self._record = (method, path, kind, self._token() in state.tokens)
        fault = state.fault_for(path)
        if fault is not None:
            self._error(fault[0], "", f"Injected fault: HTTP {fault[0]}.", method, retry_after=fault[1])
        elif kind == "model_info" and info:
            self._model_info(info.group(1), info.group(2), parse_qs(url.query))
        elif kind == "tree" and tree:
            self._tree(tree.group(1), unquote(tree.group(2)), unquote(tree.group(3) or ""), url.query)
        elif kind.startswith("file_") and resolve:
            repo_id, rev, file = resolve.group(1), unquote(resolve.group(2)), unquote(resolve.group(3))
            self._file(method, repo_id, rev, file)
        else:
            self._error(404, "", "Not found.", method)

    def send_response(self, code: int, message: str | None = None) -> None:
        """Records the Hub request before the client can see any answer (tests count right after)."""
        record = getattr(self, "_record", None)
        if record is not None:
            self.server.state.record(Request(record[0], record[1], record[2], code, record[3]))
            self._record = None
        super().send_response(code, message)

    # ---- Hub routes

    def _model_info(self, repo_id: str, rev: str | None, query: dict[str, list[str]]) -> int:
        repo = self.server.state.repos.get(repo_id)
        if repo is None:
            return self._error(404, "RepoNotFound", "Repository not found", "GET")
        if rev is not None and unquote(rev) not in ("main", repo.sha):
            return self._error(404, "RevisionNotFound", f"Invalid rev id: {unquote(rev)}", "GET")
        blobs = (query.get("blobs") or ["false"])[0].lower() in ("true", "1")
        return self._json(200, repo.info(blobs=blobs))

    def _tree(self, repo_id: str, rev: str, folder: str, query: str) -> int:
        params = parse_qsl(query, keep_blank_values=True)
        flags = {k: v.lower() in ("true", "1") for k, v in params if k in ("recursive", "expand")}
        cursor = next((v for k, v in params if k == "cursor"), None)
        start = 0 if cursor is None else _cursor_offset(cursor)
        if start is None:
            return self._error(400, "", f"Invalid cursor: {cursor}", "GET")
        repo = self.server.state.repos.get(repo_id)
        if repo is None:
            return self._error(404, "RepoNotFound", "Repository not found", "GET")
        if rev not in ("main", repo.sha):
            return self._error(404, "RevisionNotFound", f"Invalid rev id: {rev}", "GET")
        entries = repo.tree(folder.strip("/"), recursive=flags.get("recursive", False))
        if entries is None:
            return self._error(404, "EntryNotFound", f"Entry not found: {folder}", "GET")
        size = self.server.state.tree_page
        if flags.get("expand", False):
            size = min(size, TREE_PAGE_EXPAND)
        size = max(1, size)
        page = entries[start : start + size]
        headers: dict[str, str] = {}
        if start + size < len(entries):
            rest = [(k, v) for k, v in params if k != "cursor"] + [("cursor", _cursor(start + size))]
            host = self.headers.get("Host") or "{}:{}".format(*self.server.server_address[:2])
            link = f"http://{host}{urlsplit(self.path).path}?{urlencode(rest)}"
            headers["Link"] = f'<{link}>; rel="next"'
        return self._json(200, page, headers)

    def _file(self, method: str, repo_id: str, rev: str, path: str) -> int:
        repo = self.server.state.repos.get(repo_id)
        if repo is None:
            return self._error(404, "RepoNotFound", "Repository not found", method)
        if rev not in ("main", repo.sha):
            return self._error(404, "RevisionNotFound", f"Invalid rev id: {rev}", method)
        if repo.gated and self._token() not in self.server.state.tokens:
            status = 403 if self._token() else 401
            message = (
                f"Access to model {repo_id} is restricted. You must have access to it and be authenticated "
                "to access it. Please log in."
                if status == 401
                else f"Access to model {repo_id} is restricted and you are not in the authorized list."
            )
            return self._error(status, "GatedRepo", message, method)
        f = repo.files.get(path)
        if f is None:
            return self._error(404, "EntryNotFound", f"Entry not found: {path}", method)
        headers = {
            "X-Repo-Commit": repo.sha,
            "ETag": f'"{f.etag}"',
            "Accept-Ranges": "bytes",
            "Content-Type": "application/octet-stream",
        }
        if f.lfs:
            headers["X-Linked-Size"] = str(f.size)
            headers["X-Linked-Etag"] = f'"{f.etag}"'
        start, end, status = 0, f.size - 1, 200
        wanted = self.headers.get("Range")
        if wanted:
            span = _parse_range(wanted, f.size)
            if span is None:
                headers["Content-Range"] = f"bytes */{f.size}"
                return self._send(416, b"", headers, method)
            start, end, status = span[0], span[1], 206
            headers["Content-Range"] = f"bytes {start}-{end}/{f.size}"
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        if f.unannounced:
            self.send_header("Connection", "close")
            self.close_connection = True
        else:
            self.send_header("Content-Length", str(end - start + 1 if f.size else 0))
        self.end_headers()
        if method == "GET":
            throttle = self.server.state.throttle
            chunk = 1 << 20 if not throttle else max(1 << 12, min(1 << 20, int(throttle / 10)))
            began = time.monotonic()
            for pos in range(start, end + 1, chunk):
                try:
                    self.wfile.write(f.read(pos, min(end, pos + chunk - 1)))
                except (BrokenPipeError, ConnectionResetError):  # the client stopped reading
                    self.close_connection = True
                    return status
                if throttle:  # sleep until the bytes sent so far are no faster than the throttle
                    ahead = (min(end, pos + chunk - 1) + 1 - start) / throttle - (time.monotonic() - began)
                    if ahead > 0:
                        time.sleep(ahead)
        return status

    # ---- control routes

    def _control(self, method: str, path: str) -> None:
        state = self.server.state
        if path == "/_mirror/faults" and method == "POST":
            body = self._body()
            retry_after = body.get("retryAfter")
            times = body.get("times")
            state.set_fault(
                int(body["status"]),
                str(body.get("match", "")),
                None if retry_after is None else str(retry_after),
                None if times is None else int(times),
            )
            self._json(200, {"status": int(body["status"]), "match": str(body.get("match", ""))})
        elif path == "/_mirror/faults" and method == "DELETE":
            state.set_fault(None)
            self._json(200, {})
        elif path == "/_mirror/requests" and method == "GET":
            with state.lock:
                items = [_asdict(r) for r in state.requests]
            self._json(200, {"requests": items})
        elif path == "/_mirror/requests" and method == "DELETE":
            with state.lock:
                state.requests.clear()
            self._json(200, {})
        else:
            self._json(404, {"error": "unknown control route"})

    # ---- helpers

    def _token(self) -> str:
        auth = self.headers.get("Authorization") or ""
        return auth[7:].strip() if auth.lower().startswith("bearer ") else ""

    def _body(self) -> dict[str, Any]:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b"{}"
        data = json.loads(raw or b"{}")
        return data if isinstance(data, dict) else {}

    def _json(self, status: int, doc: Any, headers: dict[str, str] | None = None) -> int:
        head = {"Content-Type": "application/json", **(headers or {})}
        return self._send(status, json.dumps(doc).encode(), head, "GET")

    def _error(
        self, status: int, code: str, message: str, method: str, *, retry_after: str | None = None
    ) -> int:
        headers = {"Content-Type": "application/json", "X-Error-Message": message}
        if code:
            headers["X-Error-Code"] = code
        if retry_after is not None:
            headers["Retry-After"] = retry_after
        return self._send(status, json.dumps({"error": message}).encode(), headers, method)

    def _send(self, status: int, body: bytes, headers: dict[str, str], method: str) -> int:
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if method != "HEAD":
            self.wfile.write(body)
        return status


def _asdict(r: Request) -> dict[str, Any]:
    return {
        "method": r.method,
        "path": r.path,
        "kind": r.kind,
        "status": r.status,
        "authorized": r.authorized,
    }


def _cursor(offset: int) -> str:
    """An opaque cursor for the tree page that starts at ``offset`` (base64, as the Hub's look)."""
    return base64.urlsafe_b64encode(json.dumps({"offset": offset}).encode()).decode()


def _cursor_offset(cursor: str) -> int | None:
    """The offset ``_cursor`` encoded; None for anything else."""
    try:
        doc = json.loads(base64.urlsafe_b64decode(cursor.encode()))
    except (binascii.Error, ValueError, UnicodeDecodeError):
        return None
    offset = doc.get("offset") if isinstance(doc, dict) else None
    return offset if isinstance(offset, int) and not isinstance(offset, bool) and offset >= 0 else None


def _parse_range(value: str, size: int) -> tuple[int, int] | None:
    """``bytes=a-b`` / ``a-`` / ``-n`` -> (start, end) inclusive, clipped; None if unsatisfiable."""
    m = _RANGE.match(value.strip())
    if not m or (not m.group(1) and not m.group(2)):
        return None
    if not m.group(1):
        n = int(m.group(2))
        return (max(0, size - n), size - 1) if n and size else None
    start = int(m.group(1))
    end = int(m.group(2)) if m.group(2) else size - 1
    if start >= size or end < start:
        return None
    return start, min(end, size - 1)
