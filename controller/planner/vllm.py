"""The vLLM runtime adapter: the container args of a launch plan (vLLM 0.11 ``vllm serve``). Pure.

Pooling endpoints use ``--runner pooling`` with ``--convert embed`` (Embeddings) or
``--convert classify`` (Rerank: the score API of classification models), as documented in vLLM's
"Pooling Models" page since 0.10 (``--task`` is gone).
"""

from __future__ import annotations

from dataclasses import dataclass

from controller.facts import ModelFacts
from shared import names

MODEL_PATH = f"{names.MODEL_MOUNT_PATH}/model"  # where the model fetcher downloads the repository
TLS_CERT = f"{names.TLS_MOUNT_PATH}/tls.crt"
TLS_KEY = f"{names.TLS_MOUNT_PATH}/tls.key"

# Our method names -> vLLM's --quantization values. Methods absent here are detected by vLLM
# from the checkpoint's quantization_config and need no flag.
_QUANTIZATION_FLAG = {"awq": "awq_marlin", "gptq": "gptq_marlin", "fp8": "fp8", "gguf": "gguf"}
_MARLIN_MIN = (8, 0)  # Marlin kernels need Ampere; older devices get the plain kernels


@dataclass(frozen=True)
class VllmLaunch:
    """The inputs of one launch, decided by the planner."""

    facts: ModelFacts
    endpoint_type: str
    served_model_name: str
    tensor_parallel_size: int
    max_model_len: int
    gpu_memory_utilization: float
    quantization: str  # our method name
    compute_capability: tuple[int, int] | None
    requires_token: bool
    extra_args: tuple[str, ...] = ()


def vllm_args(launch: VllmLaunch) -> list[str]:
    args = [
        "--model",
        MODEL_PATH,
        "--served-model-name",
        launch.served_model_name,
        "--host",
        "0.0.0.0",
        "--port",
        str(names.RUNTIME_PORT),
        "--tensor-parallel-size",
        str(launch.tensor_parallel_size),
        "--max-model-len",
        str(launch.max_model_len),
        "--gpu-memory-utilization",
        f"{launch.gpu_memory_utilization:g}",
    ]
    flag = _quantization_flag(launch.quantization, launch.compute_capability)
    if flag:
        args += ["--quantization", flag]
    if launch.endpoint_type == "Embeddings":
        args += ["--runner", "pooling", "--convert", "embed"]
    elif launch.endpoint_type == "Rerank":
        args += ["--runner", "pooling", "--convert", "classify"]
    args += ["--ssl-certfile", TLS_CERT, "--ssl-keyfile", TLS_KEY]
    if launch.requires_token:
        args.append(f"--api-key=$({names.API_KEY_ENV})")
    args += list(launch.extra_args)
    return args


def _quantization_flag(method: str, capability: tuple[int, int] | None) -> str | None:
    flag = _QUANTIZATION_FLAG.get(method)
    if flag and flag.endswith("_marlin") and (capability is None or capability < _MARLIN_MIN):
        return flag.removesuffix("_marlin")
    return flag
