"""Pieces of the informer that need no server: splitting a watch stream into events, and backoff."""

from __future__ import annotations

import pytest

from controller.kube.informer import backoff, split_lines


@pytest.mark.parametrize(
    ("buffer", "chunk", "lines", "rest"),
    [
        (b"", b'{"a":1}\n', [b'{"a":1}'], b""),
        (b"", b'{"a":1}\n{"b"', [b'{"a":1}'], b'{"b"'),
        (b'{"b"', b':2}\n\n{"c":3}\n', [b'{"b":2}', b'{"c":3}'], b""),
        (b"", b'{"partial', [], b'{"partial'),
        (b"", b"\n\n", [], b""),
    ],
    ids=[
        "one whole event",
        "an event cut in the middle keeps its start",
        "the kept start joins the next chunk; blank lines are skipped",
        "a chunk with no newline is kept whole",
        "only newlines yield nothing",
    ],
)
def test_watch_stream_chunks_split_into_whole_lines(
    buffer: bytes, chunk: bytes, lines: list[bytes], rest: bytes
) -> None:
    assert split_lines(buffer, chunk) == (lines, rest)


@pytest.mark.parametrize(
    ("failures", "no_jitter", "full_jitter"),
    [(1, 0.2, 0.1), (2, 0.4, 0.2), (5, 3.2, 1.6), (8, 25.6, 12.8), (9, 30.0, 15.0), (100, 30.0, 15.0)],
)
def test_reconnect_backoff_doubles_up_to_its_cap_with_at_most_half_taken_off(
    failures: int, no_jitter: float, full_jitter: float
) -> None:
    assert backoff(failures, base=0.2, cap=30.0, rand=lambda: 0.0) == pytest.approx(no_jitter)
    assert backoff(failures, base=0.2, cap=30.0, rand=lambda: 1.0) == pytest.approx(full_jitter)
