"""TtlLru and SingleFlight (controller.modelhub.cache)."""

from __future__ import annotations

import threading
import time

import pytest

from controller.modelhub.cache import SingleFlight, TtlLru


class Clock:
    now = 0.0

    def __call__(self) -> float:
        return self.now


def test_an_entry_expires_after_its_ttl() -> None:
    clock = Clock()
    cache: TtlLru[str, int] = TtlLru(max_entries=4, ttl=10, clock=clock)
    cache.put("a", 1)
    clock.now = 9.9
    assert cache.get("a") == 1
    clock.now = 10.0
    assert cache.get("a") is None
    assert len(cache) == 0


def test_the_least_recently_used_entry_goes_first() -> None:
    cache: TtlLru[str, int] = TtlLru(max_entries=2, ttl=None, clock=Clock())
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.get("a") == 1  # "b" is now the least recently used
    cache.put("c", 3)
    assert (cache.get("a"), cache.get("b"), cache.get("c")) == (1, None, 3)


def test_a_cache_needs_room_for_one_entry() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        TtlLru(max_entries=0, ttl=None, clock=Clock())


def test_single_flight_runs_one_caller_per_key_and_forgets_idle_keys() -> None:
    flight: SingleFlight[str] = SingleFlight()
    inside = 0
    most = 0
    guard = threading.Lock()

    def work() -> None:
        nonlocal inside, most
        with flight.hold("k"):
            with guard:
                inside += 1
                most = max(most, inside)
            time.sleep(0.005)
            with guard:
                inside -= 1

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert most == 1
    assert len(flight) == 0


def test_different_keys_do_not_wait_for_each_other() -> None:
    flight: SingleFlight[str] = SingleFlight()
    with flight.hold("a"):
        done = threading.Event()

        def other() -> None:
            with flight.hold("b"):
                done.set()

        threading.Thread(target=other).start()
        assert done.wait(2)


def test_a_cache_bounded_in_bytes_drops_the_least_recently_used_until_it_fits() -> None:
    cache: TtlLru[str, bytes] = TtlLru(max_entries=100, ttl=None, clock=Clock(), max_bytes=10, weigh=len)
    cache.put("a", b"1234")
    cache.put("b", b"1234")
    assert cache.get("a") == b"1234"  # "b" is now the least recently used
    cache.put("c", b"1234")
    assert (cache.get("a"), cache.get("b"), cache.get("c")) == (b"1234", None, b"1234")
    assert cache.bytes == 8
    cache.put("a", b"1")  # a replaced value is weighed again
    assert cache.bytes == 5


def test_a_value_heavier_than_the_whole_cache_is_not_kept() -> None:
    cache: TtlLru[str, bytes] = TtlLru(max_entries=100, ttl=None, clock=Clock(), max_bytes=10, weigh=len)
    cache.put("a", b"12")
    cache.put("big", b"x" * 11)
    assert (cache.get("a"), cache.get("big"), cache.bytes) == (b"12", None, 2)
