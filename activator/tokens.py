"""The order's token check, as the runtime's token guard does it (controller/render/token_guard.py). Pure.

The token is stored only as its SHA-256 digest; a presented token is digested and compared with
``hmac.compare_digest``, so neither its contents nor its length show in the timing.
"""

from __future__ import annotations

import hashlib
import hmac


def token_digest(token: str | bytes) -> bytes:
    """The SHA-256 digest a token is kept and compared as."""
    return hashlib.sha256(token.encode() if isinstance(token, str) else token).digest()


def bearer_matches(authorization: str | None, digest: bytes | None) -> bool:
    """Whether ``Authorization: Bearer <token>`` carries the token of ``digest``. No digest (the order
    has no token known here), no header, another scheme or an empty token: False (fail closed). The token is taken
    as the runtime's guard takes it: everything after the first space, unstripped."""
    if digest is None or not authorization:
        return False
    scheme, _, token = authorization.partition(" ")
    if scheme.lower() != "bearer" or not token:
        return False
    return hmac.compare_digest(token_digest(token), digest)
