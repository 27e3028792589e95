"""The HF mirror stand-in: a Hugging Face Hub-compatible mirror of a dozen real models, on loopback.

Run it with ``python -m standins.hub_mirror --port 0``, or start it in-process with
``start_mirror()``, which returns a ``RunningMirror`` (its ``url`` is what ``HF_ENDPOINT`` or the
controller's ``hfEndpoint`` setting takes). The facts it serves are in ``standins/hub_data``.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass

from standins.hub_mirror.repos import Repo, load_repos
from standins.hub_mirror.server import DEFAULT_TOKEN, TREE_PAGE, MirrorServer, MirrorState, Request

__all__ = ["DEFAULT_TOKEN", "Request", "RunningMirror", "start_mirror"]


@dataclass
class RunningMirror:
    """A mirror serving on a thread. ``stop()`` closes it; it is also a context manager."""

    url: str
    state: MirrorState
    _server: MirrorServer
    _thread: threading.Thread

    @property
    def repos(self) -> dict[str, Repo]:
        return self.state.repos

    def requests(self) -> list[Request]:
        with self.state.lock:
            return list(self.state.requests)

    def clear_requests(self) -> None:
        with self.state.lock:
            self.state.requests.clear()

    def request_count(self, kind: str | None = None) -> int:
        """Hub requests served so far (of one ``kind``: model_info, file_get, file_range, file_head)."""
        with self.state.lock:
            return sum(1 for r in self.state.requests if kind is None or r.kind == kind)

    def inject_fault(
        self, status: int, *, match: str = "", retry_after: str | None = None, times: int | None = None
    ) -> None:
        """Answer Hub requests whose path contains ``match`` with ``status`` (and a ``Retry-After``
        header when given): the next ``times`` of them, or all until ``clear_faults``."""
        self.state.set_fault(status, match, retry_after, times)

    def clear_faults(self) -> None:
        self.state.set_fault(None)

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> RunningMirror:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start_mirror(
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    tokens: Iterable[str] = (DEFAULT_TOKEN,),
    throttle: float | None = None,
    hostile: bool = False,
    tree_page: int = TREE_PAGE,
    tiny: bool = False,
) -> RunningMirror:
    """Serve the mirror on ``host:port`` (0: a free port) in a daemon thread; ``throttle`` caps each
    file body at that many bytes per second; ``hostile`` adds the repositories of
    ``standins.hub_mirror.hostile``; ``tree_page`` is the most entries a page of a tree listing holds
    (the Hub's 1000 unless a test wants to see the paging); ``tiny`` adds the tiny real models of
    ``devtools.tiny_models`` that are built in the cache (``standins.hub_mirror.tiny``), served whole."""
    repos = load_repos()
    if hostile:
        from standins.hub_mirror.hostile import hostile_repos

        repos.update(hostile_repos())
    if tiny:
        from standins.hub_mirror.tiny import tiny_repos

        repos.update(tiny_repos())
    state = MirrorState(repos=repos, tokens=frozenset(tokens), throttle=throttle, tree_page=tree_page)
    server = MirrorServer((host, port), state)
    thread = threading.Thread(target=server.serve_forever, name="hf-mirror", daemon=True)
    thread.start()
    bound_host, bound_port = server.server_address[:2]
    return RunningMirror(f"http://{bound_host!s}:{bound_port}", state, server, thread)
