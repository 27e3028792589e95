"""The vLLM adapter: the container args a launch plan carries."""

from __future__ import annotations

from typing import Any

import pytest

from controller.planner.vllm import MODEL_PATH, TLS_CERT, TLS_KEY, VllmLaunch, vllm_args
from shared import names
from testkit.planner import LLAMA_8B, QWEN_32B_AWQ


def make_launch(**changes: Any) -> VllmLaunch:
    fields: dict[str, Any] = {
        "facts": LLAMA_8B,
        "endpoint_type": "Chat",
        "served_model_name": "meta-llama/Llama-3.1-8B-Instruct",
        "tensor_parallel_size": 1,
        "max_model_len": 8192,
        "gpu_memory_utilization": 0.9,
        "quantization": "none",
        "compute_capability": (8, 9),
    }
    fields.update(changes)
    return VllmLaunch(**fields)


def flag(args: list[str], name: str) -> str | None:
    return args[args.index(name) + 1] if name in args else None


def test_a_chat_launch_names_the_model_port_lengths_and_tls_that_reloads() -> None:
    args = vllm_args(make_launch())
    assert flag(args, "--model") == MODEL_PATH
    assert MODEL_PATH.startswith(names.MODEL_MOUNT_PATH)
    assert flag(args, "--served-model-name") == "meta-llama/Llama-3.1-8B-Instruct"
    assert flag(args, "--port") == str(names.RUNTIME_PORT)
    assert flag(args, "--tensor-parallel-size") == "1"
    assert flag(args, "--max-model-len") == "8192"
    assert flag(args, "--gpu-memory-utilization") == "0.9"
    assert (flag(args, "--ssl-certfile"), flag(args, "--ssl-keyfile")) == (TLS_CERT, TLS_KEY)
    assert "--enable-ssl-refresh" in args
    assert TLS_CERT.startswith(names.TLS_MOUNT_PATH)
    assert "--quantization" not in args
    assert "--runner" not in args
    assert "--trust-remote-code" not in args


def test_the_api_key_is_never_an_argument_vllm_reads_it_from_its_environment() -> None:
    args = vllm_args(make_launch())
    assert not any("api-key" in a or names.API_KEY_ENV in a for a in args)
    assert names.API_KEY_ENV == "VLLM_API_KEY"


@pytest.mark.parametrize("capability", [(7, 5), (8, 0), (9, 0)])
def test_an_awq_checkpoint_gets_no_quantization_flag_so_vllm_picks_marlin_itself(
    capability: tuple[int, int],
) -> None:
    args = vllm_args(make_launch(facts=QWEN_32B_AWQ, quantization="awq", compute_capability=capability))
    assert "--quantization" not in args and not any("marlin" in a for a in args)


def test_a_model_that_needs_remote_code_runs_with_trust_remote_code() -> None:
    facts = LLAMA_8B.model_copy(update={"requires_remote_code": True})
    assert "--trust-remote-code" in vllm_args(make_launch(facts=facts))


@pytest.mark.parametrize(("endpoint", "convert"), [("Embeddings", "embed"), ("Rerank", "classify")])
def test_pooling_endpoints_use_the_pooling_runner(endpoint: str, convert: str) -> None:
    args = vllm_args(make_launch(endpoint_type=endpoint))
    assert flag(args, "--runner") == "pooling"
    assert flag(args, "--convert") == convert
    assert "--task" not in args, "deprecated since vLLM 0.10, refused by 0.13"


def test_extra_args_come_last() -> None:
    args = vllm_args(make_launch(extra_args=("--enable-prefix-caching",)))
    assert args[-1] == "--enable-prefix-caching"
