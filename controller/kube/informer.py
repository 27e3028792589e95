"""An informer: list, then watch from the last resourceVersion, keeping a cache and calling a handler
for every change. One thread per informer; ``controller.__main__`` runs one per kind it observes.

- The watch asks for bookmarks, so a quiet kind still advances its resourceVersion.
- 410 Gone (an HTTP 410, or a watch ERROR event with code 410) means the resourceVersion is too old:
  list again and diff against the cache, so changes missed meanwhile still reach the handler.
- Any other failure (connection refused or dropped, 5xx, 429) retries with exponential backoff and
  jitter, resuming the watch from the last resourceVersion.
- A handler that raises is logged; it never stops the informer.
- ``transform`` (client-go's SetTransform) maps each listed or watched object to what is kept: the
  cache and the handler both get its result, so a field it drops is gone for both.
"""

from __future__ import annotations

import builtins
import logging
import random
import threading
from collections.abc import Callable, Iterator
from typing import Any

from controller.kube import jsondecode
from controller.kube.cache import Cache, Change, Obj
from controller.kube.client import ApiClient, Resource, open_request, path_for, request
from controller.kube.errors import ApiUnavailable, Gone, KubeError, error_from_status

log = logging.getLogger(__name__)

Handler = Callable[[str, Obj, Obj | None], None]


def _ignore(event: str, obj: Obj, old: Obj | None) -> None:
    pass


def split_lines(buffer: bytes, chunk: bytes) -> tuple[list[bytes], bytes]:
    """Complete lines of ``buffer + chunk`` (newline-delimited JSON), and the incomplete rest."""
    data = buffer + chunk
    *lines, rest = data.split(b"\n")
    return [line for line in lines if line.strip()], rest


def backoff(failures: int, *, base: float, cap: float, rand: Callable[[], float] = random.random) -> float:
    """``base`` * 2^(failures-1), capped, with up to 50% jitter taken off so peers spread out."""
    delay = min(cap, base * 2.0 ** min(max(failures - 1, 0), 32))
    return delay * (1.0 - 0.5 * rand())


class Informer:
    def __init__(
        self,
        api_client: ApiClient,
        resource: Resource,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        handler: Handler | None = None,
        watch_timeout: int = 300,
        connect_timeout: float = 10.0,
        min_backoff: float = 0.2,
        max_backoff: float = 30.0,
        page_size: int = 500,
        index_label: str | None = None,
        transform: Callable[[Obj], Obj] | None = None,
    ) -> None:
        self.api_client = api_client
        self.resource = resource
        self.namespace = namespace
        self.label_selector = label_selector
        self.field_selector = field_selector
        self.handler = handler or _ignore
        self.watch_timeout = watch_timeout
        self.connect_timeout = connect_timeout
        self.min_backoff = min_backoff
        self.max_backoff = max_backoff
        self.page_size = page_size
        self.transform = transform
        self.cache = Cache(index_label)
        self.relists = 0  # how many times the informer listed (1 after the first sync)
        self.watches = 0  # how many watch connections it opened
        self._synced = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._response: Any = None  # the open watch, so stop() can cut it
        self._resource_version: str | None = None

    # ------------------------------------------------------------ reading

    def get(self, namespace: str | None, name: str) -> Obj | None:
        return self.cache.get(namespace, name)

    def list(self, namespace: str | None = None) -> builtins.list[Obj]:
        return self.cache.list(namespace)

    def labelled(self, namespace: str, value: str) -> builtins.list[Obj]:
        """Objects in ``namespace`` whose index label is ``value`` (see ``Cache``)."""
        return self.cache.labelled(namespace, value)

    @property
    def has_synced(self) -> bool:
        return self._synced.is_set()

    def wait_synced(self, timeout: float | None = None) -> bool:
        return self._synced.wait(timeout)

    @property
    def resource_version(self) -> str | None:
        """The last resourceVersion seen (``None`` before the first list, and while relisting)."""
        return self._resource_version

    # ---------------------------------------------------------- lifecycle

    def start(self) -> None:
        if self._thread is not None:
            return
        self._thread = threading.Thread(target=self.run, name=f"informer-{self.resource.plural}", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        self.drop_watch()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def drop_watch(self) -> None:
        """Cut the open watch connection (the informer reconnects unless stopping)."""
        with self._lock:
            resp = self._response
        if resp is not None:
            shutdown = getattr(resp, "shutdown", None)
            try:
                if shutdown is not None:
                    shutdown()
                else:
                    resp.close()
            except Exception:  # already closed
                log.debug("closing the %s watch failed", self.resource.plural, exc_info=True)

    def run(self) -> None:
        """List and watch until ``stop``."""
        failures = 0
        while not self._stop.is_set():
            watches = self.watches
            try:
                if self._resource_version is None:
                    self._relist()
                    failures = 0
                if self._watch():
                    failures = 0
                else:  # ended without a single event: do not spin on a server that hangs up at once
                    failures += 1
                    self._stop.wait(backoff(failures, base=self.min_backoff, cap=self.max_backoff))
            except Gone as e:
                log.info("%s: %s; listing again", self.resource.plural, e)
                self._resource_version = None
            except Exception as e:
                if self._stop.is_set():
                    break
                if self.watches > watches:  # the watch was up, then broke: start the backoff afresh
                    failures = 0
                failures += 1
                delay = backoff(failures, base=self.min_backoff, cap=self.max_backoff)
                log.warning(
                    "%s: list/watch failed (%s: %s); retrying in %.1fs",
                    self.resource.plural,
                    type(e).__name__,
                    e,
                    delay,
                )
                self._stop.wait(delay)

    # ----------------------------------------------------------- internals

    def _query(self) -> dict[str, str | int | bool]:
        q: dict[str, str | int | bool] = {}
        if self.label_selector:
            q["labelSelector"] = self.label_selector
        if self.field_selector:
            q["fieldSelector"] = self.field_selector
        return q

    def _complete(self, obj: Obj) -> Obj:
        obj.setdefault("apiVersion", self.resource.api_version)
        obj.setdefault("kind", self.resource.kind)
        return obj if self.transform is None else self.transform(obj)

    def _relist(self) -> None:
        path = path_for(self.resource, namespace=self.namespace)
        query = {**self._query(), "limit": self.page_size}
        items: builtins.list[Obj] = []
        while True:
            page = request(self.api_client, "GET", path, query=query, timeout=60.0)
            items.extend(self._complete(o) for o in page.get("items") or [])
            meta = page.get("metadata") or {}
            if not meta.get("continue"):
                break
            query["continue"] = meta["continue"]
        changes = self.cache.replace(items)
        self.relists += 1
        self._resource_version = meta.get("resourceVersion")
        self._synced.set()
        for change in changes:
            self._dispatch(change)

    def _watch(self) -> int:
        """Watch from the last resourceVersion until the server ends the watch (a normal return);
        how many events (bookmarks included) it carried."""
        query = {
            **self._query(),
            "watch": True,
            "allowWatchBookmarks": True,
            "resourceVersion": self._resource_version or "",
            "timeoutSeconds": self.watch_timeout,
        }
        resp = open_request(
            self.api_client,
            "GET",
            path_for(self.resource, namespace=self.namespace),
            query=query,
            timeout=(self.connect_timeout, self.watch_timeout + 30.0),
        )
        with self._lock:
            self._response = resp
        self.watches += 1
        events = 0
        try:
            if self._stop.is_set():  # stop() ran before the response was stored: it could not cut it
                return events
            for line in self._lines(resp):
                if self._stop.is_set():
                    break
                self._handle_line(line)
                events += 1
            return events
        finally:
            with self._lock:
                self._response = None
            resp.release_conn()

    def _lines(self, resp: Any) -> Iterator[bytes]:
        rest = b""
        for chunk in resp.stream(64 * 1024, decode_content=True):
            lines, rest = split_lines(rest, chunk)
            yield from lines
        if rest.strip():
            yield rest

    def _handle_line(self, line: bytes) -> None:
        try:
            event = jsondecode.loads(line)
        except ValueError as e:
            raise ApiUnavailable(f"watch of {self.resource.plural}: undecodable event: {e}", status=0) from e
        kind, obj = event.get("type"), event.get("object") or {}
        if kind == "ERROR":
            raise error_from_status(int(obj.get("code") or 0), obj, what=f"watch of {self.resource.plural}")
        rv = (obj.get("metadata") or {}).get("resourceVersion")
        if kind == "BOOKMARK":
            if rv:
                self._resource_version = rv
            return
        if kind not in ("ADDED", "MODIFIED", "DELETED"):
            raise KubeError(f"watch of {self.resource.plural}: unknown event type {kind!r}", status=0)
        change = self.cache.apply(kind, self._complete(obj))
        if rv:
            self._resource_version = rv
        if change is not None:
            self._dispatch(change)

    def _dispatch(self, change: Change) -> None:
        event, obj, old = change
        try:
            self.handler(event, obj, old)
        except Exception:
            meta = obj.get("metadata") or {}
            log.exception(
                "%s: handler failed on %s %s/%s",
                self.resource.plural,
                event,
                meta.get("namespace"),
                meta.get("name"),
            )
