"""The vLLM runtime adapter: the container args of a launch plan (``vllm serve`` of the pinned release,
``shared.runtime_images.PINNED``). Pure.

Pooling endpoints use ``--runner pooling`` with ``--convert embed`` (Embeddings) or
``--convert classify`` (Rerank: the score API of classification models), as documented in vLLM's
"Pooling Models" page since 0.10 (``--task`` is gone).

- **Quantization**: no ``--quantization`` flag but for GGUF. vLLM reads the method from the
  checkpoint's ``quantization_config`` and upgrades AWQ and GPTQ to its Marlin kernels where the
  device allows; naming a method (``awq``) would force that exact kernel.
- **The API key** is not an argument: vLLM reads ``VLLM_API_KEY`` from the environment, which the
  renderer fills from the ``<order>-auth`` Secret (vLLM logs its non-default arguments).
- **TLS**: ``--enable-ssl-refresh`` reloads the certificate when cert-manager renews it.
- **Multi-node** (on Ray, which every supported release has; 0.11 has no ``--nnodes``): tensor parallel within a node, pipeline parallel
  across the nodes, on Ray (``--distributed-executor-backend ray``), as vLLM's
  ``examples/online_serving/multi-node-serving.sh`` documents; the Ray cluster is started by the
  LeaderWorkerSet's pods (``controller.render.group``).
- **Remote code**: ``--trust-remote-code`` only for a model whose config needs it; the planner picks
  such a model only with a recipe that opts in (``trustRemoteCode``).

Every flag emitted here is checked against the flags vLLM's own parser accepts, dumped per version
(tests/unit/planner/test_vllm_flags.py), and every plan of the mirror's models goes through the
pinned vLLM's parser and model-config validation (tests/runtime/test_vllm_validation.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from controller.model_facts.facts import ModelFacts
from shared import names

MODEL_PATH = f"{names.MODEL_MOUNT_PATH}/model"  # where the model fetcher downloads the repository
TLS_CERT = f"{names.TLS_MOUNT_PATH}/tls.crt"
TLS_KEY = f"{names.TLS_MOUNT_PATH}/tls.key"


@dataclass(frozen=True)
class VllmLaunch:
    """The inputs of one launch, decided by the planner."""

    facts: ModelFacts
    endpoint_type: str
    served_model_name: str
    tensor_parallel_size: int
    max_model_len: int
    gpu_memory_utilization: float
    quantization: str  # our method name; vLLM detects it from the checkpoint
    compute_capability: tuple[int, int] | None
    extra_args: tuple[str, ...] = ()
    pipeline_parallel_size: int = 1  # nodes of a multi-node replica (Ray, one stage per node)


def model_path(facts: ModelFacts) -> str:
    """What ``--model`` names: the downloaded repository, or for GGUF the one ``.gguf`` file in it
    (vLLM loads a GGUF model from its file, not from a directory)."""
    if facts.format == "GGUF":
        ggufs = sorted(name for name in facts.files if name.endswith(".gguf"))
        if len(ggufs) == 1:
            return f"{MODEL_PATH}/{ggufs[0]}"
    return MODEL_PATH


def vllm_args(launch: VllmLaunch) -> list[str]:
    args = [
        "--model",
        model_path(launch.facts),
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
    if launch.pipeline_parallel_size > 1:
        args += [
            "--pipeline-parallel-size",
            str(launch.pipeline_parallel_size),
            "--distributed-executor-backend",
            "ray",
        ]
    if launch.quantization == "gguf":
        args += ["--quantization", "gguf"]  # GGUF files carry no quantization_config
    if launch.facts.requires_remote_code:
        args.append("--trust-remote-code")
    if launch.endpoint_type == "Embeddings":
        args += ["--runner", "pooling", "--convert", "embed"]
    elif launch.endpoint_type == "Rerank":
        args += ["--runner", "pooling", "--convert", "classify"]
    args += ["--ssl-certfile", TLS_CERT, "--ssl-keyfile", TLS_KEY, "--enable-ssl-refresh"]
    args += list(launch.extra_args)
    return args
