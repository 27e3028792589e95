"""What a failed Hub request means for an order: the three exceptions the reconciler turns into reasons.

``translate`` maps an exception raised by huggingface_hub (or httpx2 under it) to one of
``ModelNotFound``, ``ModelAccessDenied`` or ``ModelSourceUnavailable`` with a message that names the
order's field to fix, and to the outcome label the request is counted under: ``not_found``,
``denied``, ``rate_limited`` (HTTP 429) or ``unavailable``. The token is never part of a message.
"""

from __future__ import annotations

import httpx2
from huggingface_hub.errors import (
    GatedRepoError,
    HfHubHTTPError,
    RemoteEntryNotFoundError,
    RepositoryNotFoundError,
    RevisionNotFoundError,
    SafetensorsParsingError,
)

from controller.modelhub.exceptions import ModelAccessDenied, ModelNotFound, ModelSourceUnavailable
from controller.modelhub.retry import parse_retry_after

__all__ = [
    "ModelAccessDenied",
    "ModelNotFound",
    "ModelSourceUnavailable",
    "http_status",
    "retry_after_of",
    "translate",
]


def http_status(e: Exception) -> int | None:
    """The HTTP status of a huggingface_hub error that carries its response, else None."""
    if isinstance(e, HfHubHTTPError) and e.response is not None:
        return e.response.status_code
    return None


def retry_after_of(e: Exception, *, now: float) -> float | None:
    """The ``Retry-After`` of the response behind ``e``, in seconds from ``now`` (epoch), if any."""
    if isinstance(e, HfHubHTTPError) and e.response is not None:
        return parse_retry_after(e.response.headers.get("retry-after"), now=now)
    return None


def translate(
    e: Exception, *, endpoint: str, repo_id: str, revision: str, token: str | None, timeout: float, now: float
) -> tuple[str, Exception]:
    """(outcome label, exception to raise) for a failed request; ``e`` itself when it is not a Hub
    or network error (a bug, which must not be reported as the user's problem)."""
    where = f"the model hub at {endpoint}"
    where_ = where[0].upper() + where[1:]  # at the start of a sentence
    status = http_status(e)
    if isinstance(e, GatedRepoError):
        if token:
            return "denied", ModelAccessDenied(
                "The token in `spec.model.authSecretRef` has no access to the gated repository "
                f"`{repo_id}`: request access on its page with that token's account, or use another token."
            )
        return "denied", ModelAccessDenied(
            f"Repository `{repo_id}` is gated: `spec.model.authSecretRef` must name a Secret holding a "
            "Hugging Face token of an account that was granted access."
        )
    if isinstance(e, RepositoryNotFoundError):
        if token and status == 401:
            return "denied", ModelAccessDenied(
                f"{where_} refused the token in `spec.model.authSecretRef` (HTTP 401) for `{repo_id}`: "
                "the token must be a valid Hugging Face access token."
            )
        return "not_found", ModelNotFound(
            f"Repository `{repo_id}` does not exist on {where}, or is private and not visible to the "
            "token given: check `spec.model.ref.name`."
        )
    if isinstance(e, RevisionNotFoundError):
        return "not_found", ModelNotFound(
            f"Revision `{revision}` does not exist in repository `{repo_id}`: "
            "`spec.model.ref.revision` must name a branch, tag or commit of it."
        )
    if isinstance(e, RemoteEntryNotFoundError):
        return "not_found", ModelNotFound(
            f"A file listed by repository `{repo_id}` at `{revision}` is missing on {where}."
        )
    if isinstance(e, HfHubHTTPError) and status in (401, 403):
        return "denied", ModelAccessDenied(
            f"{where_} refused access to `{repo_id}` (HTTP {status}): "
            "the token in `spec.model.authSecretRef` must be valid and have access to the repository."
        )
    if isinstance(e, HfHubHTTPError) and status is not None:
        hint = retry_after_of(e, now=now)
        asks = f" (it asks to retry after {hint:g}s)" if hint is not None else ""
        return "rate_limited" if status == 429 else "unavailable", ModelSourceUnavailable(
            f"{where_} answered HTTP {status} for `{repo_id}`{asks}; retrying with backoff.",
            status=status,
            retry_after=hint,
        )
    if isinstance(e, httpx2.TimeoutException):
        return "unavailable", ModelSourceUnavailable(
            f"{where_} did not answer within {timeout:g}s for `{repo_id}`; retrying with backoff.",
            slow=True,
        )
    if isinstance(e, httpx2.HTTPError | OSError):
        return "unavailable", ModelSourceUnavailable(
            f"{where_} could not be reached ({type(e).__name__}); retrying with backoff."
        )
    if isinstance(e, SafetensorsParsingError | ValueError):
        return "unavailable", ModelSourceUnavailable(
            f"{where_} served unreadable metadata for `{repo_id}` at `{revision}` ({type(e).__name__})."
        )
    return "unavailable", e
