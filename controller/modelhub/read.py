"""Bounded reads from the Hub: every body is streamed and cut at a byte limit and a deadline. I/O edge.

huggingface_hub reads each answer whole (``response.content``), following redirects, so a 3 GB
config.json would be read into memory before anything could look at its size. Here the body is read
chunk by chunk and the read stops as soon as it passes ``limit`` (``TooLarge``), or when it has taken
longer than ``deadline`` seconds in all (the client's timeout is per read, so a body trickling one
byte at a time would never trip it).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

import httpx2
from huggingface_hub import get_session, hf_hub_url, hf_raise_for_status
from huggingface_hub.utils._headers import build_hf_headers

from controller.modelhub.exceptions import ModelNotReady
from controller.modelhub.limits import HubLimits, header_length, parse_json, too_large

FIRST_READ = 100_000
"""The first read of a safetensors file (as huggingface_hub does): most headers fit in it."""


class TooLarge(Exception):  # noqa: N818 - a signal to the caller, who words the refusal
    """The body passed ``limit`` bytes; ``size`` is how many were seen (or announced) by then."""

    def __init__(self, size: int) -> None:
        super().__init__(f"{size} bytes")
        self.size = size


def get_bounded(
    url: str,
    *,
    headers: Mapping[str, str],
    timeout: float,
    limit: int,
    deadline: float,
    params: Mapping[str, str] | None = None,
    keep: int | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> bytes:
    """The body of ``GET url``, at most ``limit`` bytes (else ``TooLarge``). With ``keep``, the first
    ``keep`` bytes only, and a longer body is not an error (a ``Range`` the server ignored)."""
    began = clock()
    with get_session().stream("GET", url, headers=dict(headers), params=params, timeout=timeout) as response:
        hf_raise_for_status(response)
        announced = response.headers.get("content-length")
        if keep is None and announced and announced.isdigit() and int(announced) > limit:
            raise TooLarge(int(announced))
        chunks: list[bytes] = []
        size = 0
        for chunk in response.iter_bytes():
            chunks.append(chunk)
            size += len(chunk)
            if keep is not None and size >= keep:
                break
            if size > limit:
                raise TooLarge(size)
            if clock() - began > deadline:
                raise httpx2.ReadTimeout(f"the body took more than {deadline:g}s")
        data = b"".join(chunks)
        return data if keep is None else data[:keep]


class BoundedReader:
    """The bounded GETs of one ``HubRequests``: JSON files, safetensors headers, any body."""

    def __init__(self, *, endpoint: str, timeout: float, limits: HubLimits) -> None:
        self.endpoint = endpoint
        self.timeout = timeout
        self.limits = limits

    def header(self, repo_id: str, commit: str, shard: str, token: str | None, budget: int) -> bytes:
        """The JSON header of one safetensors file: its first ``FIRST_READ`` bytes, and when the header
        is longer, a second ``Range`` GET of exactly the rest; within the per-file bound and ``budget``
        (what is left of the total bound)."""
        limits = self.limits
        url = hf_hub_url(repo_id, shard, revision=commit, endpoint=self.endpoint)
        first = self.get(url, token, FIRST_READ, shard, repo_id, range_=(0, FIRST_READ - 1), keep=FIRST_READ)
        n = header_length(first, filename=shard, repo_id=repo_id, limit=limits.header_bytes)
        if n > budget:
            raise too_large(
                shard, repo_id, "the size of the safetensors headers together", limits.headers_total_bytes
            )
        if n + 8 <= len(first):
            return first[8 : 8 + n]
        del first
        rest = self.get(url, token, n, shard, repo_id, range_=(8, n + 7), keep=n)
        if len(rest) < n:
            raise ModelNotReady(f"`{shard}` of repository `{repo_id}` is refused: its header is cut short.")
        return rest

    def json_file(
        self, repo_id: str, commit: str, filename: str, token: str | None, limit: int
    ) -> dict[str, Any]:
        url = hf_hub_url(repo_id, filename, revision=commit, endpoint=self.endpoint)
        data = self.get(url, token, limit, filename, repo_id)
        return parse_json(data, filename=filename, repo_id=repo_id, limits=self.limits)

    def get(
        self,
        url: str,
        token: str | None,
        limit: int,
        what: str,
        repo_id: str,
        *,
        params: dict[str, str] | None = None,
        range_: tuple[int, int] | None = None,
        keep: int | None = None,
    ) -> bytes:
        """One bounded GET (``controller.modelhub.read``); beyond ``limit``, ModelNotReady naming ``what``."""
        headers = dict(build_hf_headers(token=token or False))
        if range_ is not None:
            headers["Range"] = f"bytes={range_[0]}-{range_[1]}"
        try:
            return get_bounded(
                url,
                headers=headers,
                timeout=self.timeout,
                limit=limit,
                deadline=self.limits.body_seconds,
                params=params,
                keep=keep,
            )
        except TooLarge as e:
            raise too_large(what, repo_id, f"its size of at least {e.size} bytes", limit) from None
