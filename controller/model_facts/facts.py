"""ModelFacts: everything the platform learned about a model, whatever its source.

Produced by ``model_facts`` (Hugging Face) or ``resolve`` (catalog); consumed by the policy checks
and the planner. Pure data.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict

from shared.api.enums import EndpointType, ModelFormat, ModelSource


class ModelFacts(BaseModel):
    """Facts about one model at one resolved revision."""

    model_config = ConfigDict(frozen=True)

    source: ModelSource
    name: str
    revision: str | None = None
    architecture: str | None = None
    endpoint_types: tuple[EndpointType, ...] = ()
    format: ModelFormat = "Safetensors"
    quantization: str = "none"  # method: none | awq | gptq | fp8 | bitsandbytes | compressed-tensors | gguf
    quantization_bits: int | None = None  # 4 for AWQ/GPTQ int4, 8 for fp8/int8, GGUF file type bits
    quantization_group_size: int | None = None
    parameter_count: int
    parameter_dtype_counts: dict[str, int] = {}  # safetensors dtype -> parameters, e.g. {"BF16": n, "I32": m}
    context_length: int | None = None
    max_seq_length: int | None = None  # sentence-transformers' cap on the input (``model_facts.sentence``)
    torch_dtype: str | None = None  # bfloat16 | float16 | float32
    num_hidden_layers: int | None = None
    num_attention_heads: int | None = None
    num_key_value_heads: int | None = None
    head_dim: int | None = None
    kv_latent: bool = False  # MLA (DeepSeek-V2/V3): one latent per token and layer, not a K and a V
    hidden_size: int | None = None
    weights_bytes: int | None = None  # sum of the weight files' sizes, when the source says
    files: dict[str, int | None] = {}  # the files the runtime loads (model_facts.files), name -> size
    source_uri: str | None = None  # where the fetcher downloads from: hf://org/repo (catalog models)
    gated: bool = False
    requires_remote_code: bool = False  # `auto_map` to repo code for a model type nothing built in knows

    @property
    def serving_context(self) -> int | None:
        """The longest context the runtime accepts: ``context_length``, capped by a sentence-transformers
        ``max_seq_length`` (vLLM refuses a ``--max-model-len`` above it)."""
        known = [n for n in (self.context_length, self.max_seq_length) if n]
        return min(known) if known else None

    @property
    def quantization_label(self) -> str:
        """The wire form of status.model.quantization: ``awq-4bit``, ``fp8``, ``none``."""
        if self.quantization == "none":
            return "none"
        if self.quantization_bits and self.quantization not in ("fp8",):
            return f"{self.quantization}-{self.quantization_bits}bit"
        return self.quantization


HF_SCHEME = "hf://"
_REPO_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


def hub_repo(uri: str | None) -> str | None:
    """``org/repo`` of an ``hf://org/repo`` location; None for anything else (``s3://``...)."""
    if not uri or not uri.startswith(HF_SCHEME):
        return None
    repo = uri.removeprefix(HF_SCHEME).strip("/")
    return repo if _REPO_ID.match(repo) else None
