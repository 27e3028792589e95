"""The SNI name read from a raw ClientHello: real hellos from Python's ssl, every prefix of one,
garbage, and hellos whose lengths lie (nothing but ``NeedMore`` ever escapes)."""

from __future__ import annotations

import ssl
import struct

import pytest

from standins.runtime.sni import NeedMore, client_hello_sni

HOST = "chat.team-a.svc"


def real_hello(host: str | None, maximum: ssl.TLSVersion = ssl.TLSVersion.MAXIMUM_SUPPORTED) -> bytes:
    """The first bytes Python's ssl sends for a handshake with ``host`` as SNI (None: no SNI)."""
    ctx = ssl.create_default_context()
    ctx.check_hostname = host is not None
    ctx.maximum_version = maximum
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = ctx.wrap_bio(incoming, outgoing, server_hostname=host)
    with pytest.raises(ssl.SSLWantReadError):
        tls.do_handshake()
    return outgoing.read()


def vector(size: int, body: bytes) -> bytes:
    return len(body).to_bytes(size, "big") + body


def built_hello(
    names: list[tuple[int, bytes]], *, extensions: bytes = b"", ext_delta: int = 0, sni_delta: int = 0
) -> bytes:
    """A minimal ClientHello record by hand; ``*_delta`` make a declared length lie by that much."""
    entries = b"".join(bytes([kind]) + vector(2, name) for kind, name in names)
    server_name = vector(2, entries)
    sni = struct.pack(">HH", 0, len(server_name) + sni_delta) + server_name
    exts = extensions + sni
    body = (
        b"\x03\x03"
        + b"\x00" * 32
        + vector(1, b"")
        + vector(2, b"\x13\x01")
        + vector(1, b"\x00")
        + (len(exts) + ext_delta).to_bytes(2, "big")
        + exts
    )
    handshake = b"\x01" + vector(3, body)
    return b"\x16\x03\x01" + vector(2, handshake)


@pytest.mark.parametrize(
    "maximum", [ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3], ids=["TLS 1.2 max", "TLS 1.3"]
)
def test_the_sni_of_a_real_hello(maximum: ssl.TLSVersion) -> None:
    hello = real_hello(HOST, maximum)
    assert client_hello_sni(hello) == HOST
    assert client_hello_sni(hello + b"bytes of the next record") == HOST


def test_a_real_hello_without_sni_gives_none() -> None:
    assert client_hello_sni(real_hello(None)) is None


@pytest.mark.parametrize("maximum", [ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3])
def test_every_strict_prefix_of_a_hello_needs_more(maximum: ssl.TLSVersion) -> None:
    hello = real_hello(HOST, maximum)
    for end in range(len(hello)):
        with pytest.raises(NeedMore):
            client_hello_sni(hello[:end])


def test_the_name_is_lower_cased_and_the_first_host_name_wins() -> None:
    hello = built_hello([(7, b"other"), (0, b"Chat.Team-A.SVC"), (0, b"second.team-a.svc")])
    assert client_hello_sni(hello) == HOST


def test_extensions_before_server_name_are_skipped() -> None:
    other = struct.pack(">HH", 10, 4) + b"\x00\x02\x00\x1d"  # supported_groups
    assert client_hello_sni(built_hello([(0, HOST.encode())], extensions=other)) == HOST


@pytest.mark.parametrize(
    "data",
    [
        b"GET /v1/models HTTP/1.1\r\nHost: chat.team-a.svc\r\n\r\n",
        b"G",
        b"\x17\x03\x03\x00\x10" + b"\x00" * 16,  # application data, not a handshake
        b"\x16\x02\x00\x00\x10",  # SSL 2-ish version
        b"\x16\x03\x01\x00\x00",  # an empty record
        b"\x16\x03\x01\x40\x01",  # longer than a TLS record can be
        b"\x16\x03\x01\x00\x30\x02",  # a ServerHello
        bytes(range(256)),
    ],
    ids=["http", "one letter", "app data", "bad version", "empty", "too long", "server hello", "bytes"],
)
def test_what_is_not_a_client_hello_gives_none(data: bytes) -> None:
    assert client_hello_sni(data) is None


@pytest.mark.parametrize(
    ("ext_delta", "sni_delta"),
    [(1, 0), (200, 0), (-1, 0), (0, 1), (0, 300), (0, -2)],
)
def test_a_hello_whose_lengths_lie_gives_none(ext_delta: int, sni_delta: int) -> None:
    truthful = built_hello([(0, HOST.encode())])
    assert client_hello_sni(truthful) == HOST
    assert (
        client_hello_sni(built_hello([(0, HOST.encode())], ext_delta=ext_delta, sni_delta=sni_delta)) is None
    )


def test_a_hello_longer_than_its_record_gives_none() -> None:
    """A hello continued in a second record is not read (the record bound is never crossed)."""
    hello = built_hello([(0, HOST.encode())])
    record_length = int.from_bytes(hello[3:5], "big")
    cut = hello[:3] + (record_length - 10).to_bytes(2, "big") + hello[5 : 5 + record_length - 10]
    assert client_hello_sni(cut) is None


def test_no_corruption_of_a_real_hello_raises_anything_but_need_more() -> None:
    hello = real_hello(HOST)
    outcomes = set()
    for at in range(len(hello)):
        for value in (0x00, 0xFF, hello[at] ^ 0x01):
            data = hello[:at] + bytes([value]) + hello[at + 1 :]
            try:
                outcomes.add(type(client_hello_sni(data)).__name__)
            except NeedMore:
                outcomes.add("NeedMore")
    assert outcomes == {"str", "NoneType", "NeedMore"}
