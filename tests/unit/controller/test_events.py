"""The event recorder: events leave the worker at once, are sent in order by the sender, a failed
send stops nothing, and a full queue drops (and counts) instead of blocking a worker."""

from __future__ import annotations

import threading
from datetime import datetime
from typing import Any

from controller.kube.events import EventRecorder

Obj = dict[str, Any]
ORDER: Obj = {"apiVersion": "ai.deckhouse.io/v1alpha1", "kind": "InferenceService", "metadata": {"name": "a"}}


def test_events_are_sent_off_the_caller_in_order_with_the_time_they_were_emitted() -> None:
    sent: list[tuple[str, datetime]] = []
    rec = EventRecorder(lambda o, t, reason, m, now: sent.append((reason, now)), senders=1)
    before = datetime.now().astimezone()
    for i in range(5):
        rec.emit(ORDER, "Normal", f"R{i}", "m")
    assert rec.flush()
    assert [r for r, _ in sent] == [f"R{i}" for i in range(5)]
    assert all(now >= before for _, now in sent)
    rec.close()


def test_a_failing_send_does_not_stop_the_sender() -> None:
    sent: list[str] = []

    def send(o: Obj, t: str, reason: str, m: str, now: datetime) -> None:
        if reason == "boom":
            raise RuntimeError("the API server said no")
        sent.append(reason)

    rec = EventRecorder(send, senders=1)
    rec.emit(ORDER, "Normal", "boom", "m")
    rec.emit(ORDER, "Normal", "after", "m")
    assert rec.flush()
    assert sent == ["after"]
    rec.close()


def test_a_full_queue_drops_and_counts_without_blocking() -> None:
    gate = threading.Event()
    dropped: list[int] = []

    def send(o: Obj, t: str, reason: str, m: str, now: datetime) -> None:
        gate.wait(5)

    rec = EventRecorder(send, capacity=2, senders=1, on_drop=lambda: dropped.append(1))
    for _ in range(6):  # one in the sender's hands, two queued, the rest dropped
        rec.emit(ORDER, "Normal", "R", "m")
    assert len(dropped) >= 3
    gate.set()
    assert rec.flush()
    rec.close()
