"""The SNI name of a TLS ClientHello, read from the raw bytes a client sent first (pure).

The router (``standins.runtime.server``) peeks at a connection's first bytes to learn which order
it is for before deciding whether to terminate TLS itself or pass the bytes through to a real
runtime. Only the first TLS record is read (a record holds at most 16 KiB; every hello Python,
curl or Go sends fits in one); a hello split over several records gives None, as does anything
that is not a ClientHello. Nothing is ever read beyond the lengths the bytes declare.
"""

from __future__ import annotations

MAX_RECORD = 16384
"""The largest TLS plaintext record (RFC 8446 5.1): a longer one is not TLS."""
HEADER = 5  # record header: content type, legacy version (2), length (2)
_HANDSHAKE, _CLIENT_HELLO, _SERVER_NAME, _HOST_NAME = 22, 1, 0, 0


class NeedMore(Exception):  # noqa: N818 (not an error: a signal to read on)
    """The bytes are a valid beginning of a ClientHello record, but the record is not complete."""


class _MalformedError(Exception):
    """A length points past its enclosing structure: not a ClientHello we can read."""


class _Reader:
    """Reads ``data`` front to back, never past its end (``_MalformedError`` instead)."""

    def __init__(self, data: bytes) -> None:
        self._data = data
        self._at = 0

    def take(self, n: int) -> bytes:
        if n > len(self._data) - self._at:
            raise _MalformedError
        chunk = self._data[self._at : self._at + n]
        self._at += n
        return chunk

    def number(self, size: int) -> int:
        return int.from_bytes(self.take(size), "big")

    def vector(self, size: int) -> _Reader:
        """A length-prefixed block (the length is ``size`` bytes) as a reader of its own."""
        return _Reader(self.take(self.number(size)))

    def rest(self) -> bytes:
        return self.take(len(self._data) - self._at)

    def done(self) -> bool:
        return self._at >= len(self._data)


def client_hello_sni(data: bytes) -> str | None:
    """The lower-cased ``server_name`` (host_name) of the ClientHello ``data`` begins with.

    None when ``data`` is not a ClientHello record, the hello carries no SNI, or a length lies;
    raises ``NeedMore`` while ``data`` is a valid but incomplete beginning of the first record.
    Bytes after the first record are ignored.
    """
    if data[:1] not in (b"", bytes([_HANDSHAKE])) or data[1:2] not in (b"", b"\x03"):
        return None
    if len(data) < HEADER:
        raise NeedMore
    length = int.from_bytes(data[3:5], "big")
    if not 4 <= length <= MAX_RECORD or data[5:6] not in (b"", bytes([_CLIENT_HELLO])):
        return None
    if len(data) < HEADER + length:
        raise NeedMore
    try:
        return _hello_sni(_Reader(data[HEADER : HEADER + length]))
    except (_MalformedError, UnicodeDecodeError):
        return None


def _hello_sni(record: _Reader) -> str | None:
    if record.number(1) != _CLIENT_HELLO:
        return None
    hello = record.vector(3)  # a hello longer than this record (continued in the next) is _MalformedError
    hello.take(2 + 32)  # legacy_version, random
    hello.vector(1)  # legacy_session_id
    hello.vector(2)  # cipher_suites
    hello.vector(1)  # legacy_compression_methods
    if hello.done():
        return None  # no extensions (a TLS 1.0 style hello)
    extensions = hello.vector(2)
    while not extensions.done():
        kind = extensions.number(2)
        body = extensions.vector(2)
        if kind == _SERVER_NAME:
            names = body.vector(2)
            while not names.done():
                name_type = names.number(1)
                name = names.vector(2).rest()
                if name_type == _HOST_NAME:
                    return name.decode("ascii").lower() or None
            return None
    return None
