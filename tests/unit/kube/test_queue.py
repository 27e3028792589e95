"""The work queue: deduplication, one worker per key, per-key backoff under a token bucket, scheduled
adds and shutdown. Time is a hand-driven clock; ``get(timeout=0)`` never blocks."""

from __future__ import annotations

import threading

import pytest

from controller.kube.queue import TokenBucket, WorkQueue

Key = tuple[str, str]
A: Key = ("ns", "a")
B: Key = ("ns", "b")
C: Key = ("ns", "c")


class FakeClock:
    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def make_queue(clock: FakeClock, **changes: float) -> WorkQueue[Key]:
    config: dict[str, float] = {"base_delay": 0.005, "max_delay": 1000.0, "qps": 10.0, "burst": 100}
    config.update(changes)
    return WorkQueue(
        base_delay=config["base_delay"],
        max_delay=config["max_delay"],
        qps=config["qps"],
        burst=int(config["burst"]),
        clock=clock,
    )


def drain(q: WorkQueue[Key]) -> list[Key]:
    out = []
    while (key := q.get(timeout=0)) is not None:
        out.append(key)
    return out


def test_a_key_added_twice_is_handed_out_once() -> None:
    q = make_queue(FakeClock())
    q.add(A)
    q.add(B)
    q.add(A)
    assert len(q) == 2
    assert drain(q) == [A, B]


def test_a_key_being_processed_is_not_handed_out_again_until_done() -> None:
    q = make_queue(FakeClock())
    q.add(A)
    assert q.get(timeout=0) == A
    q.add(A)
    assert q.get(timeout=0) is None
    assert len(q) == 0
    q.done(A)
    assert q.get(timeout=0) == A


def test_a_key_not_added_while_processing_is_gone_after_done() -> None:
    q = make_queue(FakeClock())
    q.add(A)
    assert q.get(timeout=0) == A
    q.done(A)
    assert q.get(timeout=0) is None


def test_many_adds_while_processing_requeue_the_key_once() -> None:
    q = make_queue(FakeClock())
    q.add(A)
    assert q.get(timeout=0) == A
    for _ in range(5):
        q.add(A)
    q.done(A)
    assert drain(q) == [A]


def test_urgent_keys_are_handed_out_before_ordinary_ones_in_their_own_order() -> None:
    q = make_queue(FakeClock())
    q.add(A)
    q.add(B, urgent=True)
    q.add(C, urgent=True)
    assert len(q) == 3
    assert drain(q) == [B, C, A]


def test_an_urgent_add_of_a_key_already_queued_leaves_it_where_it_is() -> None:
    q = make_queue(FakeClock())
    q.add(A)
    q.add(B)
    q.add(B, urgent=True)
    assert drain(q) == [A, B]


def test_an_urgent_key_added_while_held_goes_to_the_front_when_done() -> None:
    q = make_queue(FakeClock())
    q.add(A)
    assert q.get(timeout=0) == A
    q.add(B)
    q.add(A, urgent=True)
    q.done(A)
    assert drain(q) == [A, B]
    q.add(C)
    q.done(A)
    q.add(A)
    assert drain(q) == [C, A], "the urgency was for one add, not for the key from then on"


@pytest.mark.parametrize(
    ("failures", "expected"),
    [(1, 0.005), (2, 0.01), (3, 0.02), (10, 0.005 * 2**9), (18, 0.005 * 2**17), (19, 1000.0), (40, 1000.0)],
)
def test_per_key_backoff_doubles_from_5ms_and_caps_at_1000s(failures: int, expected: float) -> None:
    clock = FakeClock()
    q = make_queue(clock, qps=1e9, burst=10**9)  # take the bucket out of the picture
    for _ in range(failures - 1):
        q.add_rate_limited(A)
        clock.advance(2000.0)
        assert q.get(timeout=0) == A
        q.done(A)
    q.add_rate_limited(A)
    clock.advance(expected * 0.999)
    assert q.get(timeout=0) is None
    clock.advance(expected * 0.002)
    assert q.get(timeout=0) == A
    assert q.num_requeues(A) == failures


def test_forget_resets_the_backoff_of_a_key() -> None:
    clock = FakeClock()
    q = make_queue(clock)
    for _ in range(5):
        q.add_rate_limited(A)
        clock.advance(10.0)
        assert q.get(timeout=0) == A
        q.done(A)
    q.forget(A)
    assert q.num_requeues(A) == 0
    q.add_rate_limited(A)
    clock.advance(0.005)
    assert q.get(timeout=0) == A


def test_backoff_is_per_key() -> None:
    clock = FakeClock()
    q = make_queue(clock)
    for _ in range(4):
        q.add_rate_limited(A)
        clock.advance(10.0)
        q.get(timeout=0)
        q.done(A)
    q.add_rate_limited(A)  # 5th failure of A: 80 ms
    q.add_rate_limited(B)  # 1st failure of B: 5 ms
    clock.advance(0.005)
    assert drain(q) == [B]
    clock.advance(0.075)
    assert drain(q) == [A]


def test_the_token_bucket_spends_its_burst_then_paces_at_qps() -> None:
    clock = FakeClock()
    bucket = TokenBucket(qps=10.0, burst=3, now=clock())
    waits = [bucket.reserve(clock()) for _ in range(5)]
    assert waits == pytest.approx([0.0, 0.0, 0.0, 0.1, 0.2])
    clock.advance(1.0)  # refills 10 tokens, capped at the burst of 3, after the 2 borrowed
    assert bucket.reserve(clock()) == 0.0


def test_rate_limited_adds_beyond_the_burst_wait_for_the_bucket() -> None:
    clock = FakeClock()
    q = make_queue(clock, qps=10.0, burst=2)
    q.add_rate_limited(A)  # token 1: 5 ms backoff
    q.add_rate_limited(B)  # token 2: 5 ms backoff
    q.add_rate_limited(C)  # bucket empty: waits 100 ms, more than its 5 ms backoff
    clock.advance(0.005)
    assert drain(q) == [A, B]
    clock.advance(0.09)
    assert q.get(timeout=0) is None
    clock.advance(0.006)
    assert drain(q) == [C]


def test_add_after_hands_the_key_out_once_due() -> None:
    clock = FakeClock()
    q = make_queue(clock)
    q.add_after(A, 30.0)
    assert len(q) == 0
    assert q.waiting() == 1
    clock.advance(29.9)
    assert q.get(timeout=0) is None
    clock.advance(0.1)
    assert len(q) == 1
    assert q.get(timeout=0) == A


def test_the_earliest_schedule_of_a_key_wins() -> None:
    clock = FakeClock()
    q = make_queue(clock)
    q.add_after(A, 30.0)
    q.add_after(A, 5.0)
    q.add_after(A, 60.0)
    clock.advance(5.0)
    assert drain(q) == [A]
    q.done(A)
    clock.advance(100.0)
    assert drain(q) == []


def test_add_after_with_no_delay_adds_now() -> None:
    q = make_queue(FakeClock())
    q.add_after(A, 0.0)
    assert q.get(timeout=0) == A


def test_a_scheduled_key_that_is_already_queued_is_handed_out_once() -> None:
    clock = FakeClock()
    q = make_queue(clock)
    q.add(A)
    q.add_after(A, 1.0)
    clock.advance(1.0)
    assert drain(q) == [A]


def test_shutdown_makes_get_return_none_and_ignores_adds() -> None:
    q = make_queue(FakeClock())
    q.add(A)
    q.shutdown()
    q.add(B)
    q.add_after(C, 1.0)
    assert q.shutting_down
    assert q.get(timeout=0) is None
    assert q.get() is None


def test_shutdown_wakes_a_blocked_worker() -> None:
    q: WorkQueue[Key] = WorkQueue()
    got: list[Key | None] = []
    worker = threading.Thread(target=lambda: got.append(q.get()))
    worker.start()
    q.shutdown()
    worker.join(10.0)
    assert not worker.is_alive()
    assert got == [None]


def test_a_blocked_worker_wakes_for_an_add() -> None:
    q: WorkQueue[Key] = WorkQueue()
    got: list[Key | None] = []
    worker = threading.Thread(target=lambda: got.append(q.get(timeout=30.0)))
    worker.start()
    q.add(A)
    worker.join(30.0)
    assert got == [A]


def test_workers_never_hold_the_same_key_at_once() -> None:
    q: WorkQueue[Key] = WorkQueue()
    keys = [("ns", f"k{i % 7}") for i in range(700)]
    holding: set[Key] = set()
    overlaps: list[Key] = []
    processed: list[Key] = []
    lock = threading.Lock()

    def work() -> None:
        while (key := q.get(timeout=0.5)) is not None:
            with lock:
                if key in holding:
                    overlaps.append(key)
                holding.add(key)
                processed.append(key)
                busy = len(processed) < 500
            if busy:  # keep adding keys while holding one, for a while
                for k in keys[:7]:
                    q.add(k)
            with lock:
                holding.discard(key)
            q.done(key)

    for k in keys:
        q.add(k)
    workers = [threading.Thread(target=work) for _ in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(60.0)
    assert overlaps == []
    assert set(processed) == set(keys)
    assert len(q) == 0
