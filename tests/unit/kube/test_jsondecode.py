"""jsondecode.loads answers exactly what json.loads answers, values and refusals alike."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.kube import jsondecode

TEXTS = [
    b'{"kind":"Deployment","metadata":{"name":"a","labels":{"x":"y"}},"spec":{"replicas":1}}',
    b'{"items":[{"a":1.5,"b":-0.0,"c":1e-7,"d":true,"e":null,"f":[]}],"metadata":{"continue":""}}',
    '{"n":"caf\\u00e9 \\ud83d\\ude00","s":"\u00e9"}'.encode(),
    b'{"big":123456789012345678901234567890,"neg":-98765432109876543210}',  # beyond 64 bits
    b'{"nan":NaN,"inf":Infinity,"minus":-Infinity,"huge":1e400}',  # json.loads takes these; orjson does not
    b'{"lone":"\\ud800"}',  # a lone surrogate escape: json.loads keeps it, orjson refuses
    b'{"max":18446744073709551615,"min":-9223372036854775808,"past":-9223372036854775809}',
    b'{"dup":1,"dup":2,"zero":-0,"e":1E5,"tiny":1e-400}',
    '{"utf16":"yes"}'.encode("utf-16"),  # json.loads detects the encoding of bytes
    b"[1,2,3]",
    b'"text"',
]


@pytest.mark.parametrize("text", TEXTS)
def test_same_values_as_json_loads(text: bytes) -> None:
    got, want = jsondecode.loads(text), json.loads(text)
    assert json.dumps(got, sort_keys=True) == json.dumps(want, sort_keys=True)
    assert repr(got) == repr(want)  # types too: an int stays an int, -0.0 stays -0.0


def test_big_integers_stay_exact() -> None:
    assert jsondecode.loads(b'{"v":123456789012345678901234567890}')["v"] == 123456789012345678901234567890


def test_may_overflow() -> None:
    assert jsondecode.may_overflow(b'{"v":1234567890123456789}')
    assert jsondecode.may_overflow(b'{"v":-12345678901234567890}')
    assert not jsondecode.may_overflow(b'{"v":123456789012345678,"w":"12345.6789012345678"}')


def test_nan_and_infinity() -> None:
    out = jsondecode.loads(b'{"a":NaN,"b":Infinity}')
    assert math.isnan(out["a"]) and out["b"] == math.inf


@pytest.mark.parametrize("text", [b"", b"{", b'{"a":}', b"[1,]", b'{"a":1} trailing'])
def test_refuses_what_json_loads_refuses(text: bytes) -> None:
    with pytest.raises(json.JSONDecodeError):
        json.loads(text)
    with pytest.raises(json.JSONDecodeError):
        jsondecode.loads(text)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@given(JSON)
def test_round_trip_matches_json_loads(value: object) -> None:
    text = json.dumps(value).encode()
    assert repr(jsondecode.loads(text)) == repr(json.loads(text))
