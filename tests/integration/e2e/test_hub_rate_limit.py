"""The controller honours the Hub's rate limit: after a 429 with Retry-After the order is requeued (no
worker waits) and asked again only once it has passed, then the order resolves. Counted and timed at the HF mirror stand-in (its fault knob answers the next n requests of
one repository with 429 and a Retry-After)."""

from __future__ import annotations

import pytest

from testkit.platform import Platform, hf

pytestmark = pytest.mark.cluster

MODEL = "Qwen/Qwen2.5-0.5B-Instruct"


def test_a_429_with_retry_after_is_honoured(platform: Platform, ns: str) -> None:
    sha = platform.mirror.repos[MODEL].sha  # a revision no earlier order left in the client's cache
    platform.mirror.inject_fault(429, match=MODEL, retry_after="2", times=2)
    try:
        platform.create_order(ns, "o", hf(MODEL, ref={"revision": sha}))
        platform.wait_phase(ns, "o", "Ready", timeout=120)
    finally:
        platform.mirror.clear_faults()
    asked = [r for r in platform.mirror.requests() if MODEL in r.path]
    refused = [i for i, r in enumerate(asked) if r.status == 429]
    assert len(refused) == 2, [(r.kind, r.status) for r in asked]
    for i in refused:
        assert asked[i + 1].at - asked[i].at >= 2.0, "a request came before the Retry-After had passed"
