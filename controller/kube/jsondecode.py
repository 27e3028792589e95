"""Decoding the API server's JSON answers: ``json.loads``'s result, faster. Pure.

At a restart the informers decode every cached object at once (about 20 MB of JSON at 2,000
orders); ``json.loads`` was a fifth of the restarted process's CPU before it answered /readyz.
orjson decodes the same text to the same Python values (dicts, lists, str, int, float, bool, None)
in about 60% of the time, with two differences this module removes, so every answer is
``json.loads``'s (the same values, or a ``ValueError``):

- an integer beyond 64 bits becomes a float in orjson: text with a run of 19 or more digits (an
  integer that might not fit; a digit run inside a string counts too, which only costs speed) is
  decoded by ``json.loads``;
- what orjson refuses but ``json.loads`` takes (NaN, Infinity, 1e400, a lone surrogate escape,
  bytes that are not UTF-8) is handed to ``json.loads``.
"""

from __future__ import annotations

import json
from typing import Any

import orjson

_DIGITS = bytes(0x30 if 0x30 <= b <= 0x39 else 0x20 for b in range(256))  # a digit to "0", else " "
_LONG_RUN = b"0" * 19  # the shortest digit run that can be an integer beyond int64


def may_overflow(data: bytes) -> bool:
    """Whether ``data`` has a run of 19 or more digits (an integer orjson might turn into a float)."""
    return _LONG_RUN in data.translate(_DIGITS)


def loads(data: bytes) -> Any:
    """``json.loads(data)``: decoded by orjson when that gives the same answer, else by ``json.loads``."""
    if may_overflow(data):
        return json.loads(data)
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return json.loads(data)
