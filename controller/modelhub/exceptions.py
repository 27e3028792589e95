"""The exceptions a failed Hub request becomes (``controller.modelhub.errors.translate`` makes them).

They live apart from ``errors`` so that importing them (``controller.modelhub.client``, ``controller.observe``)
does not import huggingface_hub and httpx2: a restarted controller whose facts are all in its store
never calls the Hub, and those imports were about a quarter of its start-up imports.
"""

from __future__ import annotations


class ModelNotFound(Exception):  # noqa: N818 - named after the reason it becomes
    """The repository, revision or its weights do not exist (or are invisible to the token)."""


class ModelAccessDenied(Exception):  # noqa: N818
    """The repository is gated, or the token was refused."""


class ModelNotReady(Exception):  # noqa: N818
    """The repository is beyond the controller's bounds (a file, a header or a number too large, too
    many shards, an impossible value): refused for that commit, not retried in a loop. The message
    names the file or field."""


class ModelSourceUnavailable(Exception):  # noqa: N818
    """The Hub could not be reached, timed out, or answered 5xx / 429: worth retrying.

    ``status`` is the HTTP status when the Hub answered; ``retry_after`` the seconds to wait before
    asking again when known (the Hub's ``Retry-After``, or the backoff the client gave up on).
    ``slow``: the Hub took the whole timeout or deadline (a worker waited for it). Only a slow
    failure lengthens the key's backoff step by step; a fast one (no connection, a 5xx) costs a worker
    nothing, so the key is asked again after the first step, and an order sees the Hub back within
    that step once an outage ends (no reason outlives its cause by more than that).
    """

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        retry_after: float | None = None,
        slow: bool = False,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.retry_after = retry_after
        self.slow = slow
