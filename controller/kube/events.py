"""Events off the reconcile workers: a bounded queue and a sender thread, as client-go's event
broadcaster does. I/O.

Events are best effort (a failed one is logged, never retried), yet sent inline they were the
largest share of a reconcile's wall time at scale: one POST per condition transition, about ten
per order on its way to Ready, each waiting on the API server. ``emit`` stamps the event time and
returns at once; a full queue drops the event and counts it rather than block a worker.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

log = logging.getLogger(__name__)
Obj = dict[str, Any]
Send = Callable[[Obj, str, str, str, datetime], None]  # regarding, type, reason, message, time


class EventRecorder:
    def __init__(
        self,
        send: Send,
        *,
        capacity: int = 10_000,
        senders: int = 2,
        on_drop: Callable[[], None] = lambda: None,
    ) -> None:
        self._send = send
        self._on_drop = on_drop
        self._queue: queue.Queue[tuple[Obj, str, str, str, datetime] | None] = queue.Queue(capacity)
        self._threads = [
            threading.Thread(target=self._run, name=f"events-{i}", daemon=True) for i in range(senders)
        ]
        for t in self._threads:
            t.start()

    def emit(self, regarding: Obj, type_: str, reason: str, message: str) -> None:
        try:
            self._queue.put_nowait((regarding, type_, reason, message, datetime.now(UTC)))
        except queue.Full:
            self._on_drop()
            log.info("event queue full; dropped %s %s", reason, (regarding.get("metadata") or {}).get("name"))

    def flush(self, timeout: float = 10.0) -> bool:
        """Wait until every event emitted so far was sent (or failed); False on timeout."""
        done = threading.Event()

        def wait() -> None:
            self._queue.join()
            done.set()

        threading.Thread(target=wait, daemon=True).start()
        return done.wait(timeout)

    def close(self) -> None:
        for _ in self._threads:
            try:
                self._queue.put_nowait(None)
            except queue.Full:
                break

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            try:
                if item is None:
                    return
                self._send(*item)
            except Exception:  # best effort: a failed event never stops the sender
                log.exception("sending an event failed")
            finally:
                self._queue.task_done()
