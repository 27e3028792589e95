"""The tensor list of a checkpoint, generated from its config.json, for header-only safetensors files.

The mirror serves no weights: each safetensors file is its real JSON header followed by zeros. The
header lists the tensor names, dtypes and shapes a real checkpoint of that architecture has, so
``get_safetensors_metadata()`` counts the same parameters per dtype as the Hub publishes.
Architectures known here: Llama-family decoders (llama, mistral, qwen2, qwen3), phi3 (fused qkv and
gate/up), DeepSeek-V3 (multi-head latent attention, routed and shared experts, the multi-token
prediction layer), BERT encoders and XLM-RoBERTa sequence classifiers; AWQ (GEMM packing) and block-FP8
quantized linear layers.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

DTYPE_BYTES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I8": 1, "U8": 1, "F8_E4M3": 1}
TORCH_TO_SAFETENSORS = {"float32": "F32", "float16": "F16", "bfloat16": "BF16"}


@dataclass(frozen=True, slots=True)
class Tensor:
    name: str
    dtype: str
    shape: tuple[int, ...]

    @property
    def count(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        return self.count * DTYPE_BYTES[self.dtype]


class UnknownArchitectureError(ValueError):
    """The config names a model type this generator does not know."""


def tensors_for(config: Mapping[str, Any]) -> list[Tensor]:
    """The tensors of a checkpoint with this config.json, in checkpoint order."""
    model_type = config.get("model_type")
    if model_type in ("llama", "mistral", "qwen2", "qwen3"):
        return list(_decoder(config))
    if model_type == "phi3":
        return list(_decoder(config, fused=True))
    if model_type == "deepseek_v3":
        return list(_deepseek_v3(config))
    if model_type == "bert":
        return list(_encoder(config, prefix="", pooler=True))
    if model_type in ("xlm-roberta", "roberta"):
        return list(_encoder(config, prefix="roberta.", pooler=False, classifier=True))
    raise UnknownArchitectureError(f"no tensor layout for model_type {model_type!r}")


def _float_dtype(config: Mapping[str, Any]) -> str:
    return TORCH_TO_SAFETENSORS[str(config.get("torch_dtype") or "float32")]


def _decoder(config: Mapping[str, Any], *, fused: bool = False) -> Iterator[Tensor]:
    dt = _float_dtype(config)
    hidden = int(config["hidden_size"])
    inter = int(config["intermediate_size"])
    heads = int(config["num_attention_heads"])
    kv_heads = int(config.get("num_key_value_heads") or heads)
    head_dim = int(config.get("head_dim") or hidden // heads)
    vocab = int(config["vocab_size"])
    model_type = config["model_type"]
    qkv_bias = model_type == "qwen2" or bool(config.get("attention_bias"))
    linear = _linear_maker(config, dt)

    yield Tensor("model.embed_tokens.weight", dt, (vocab, hidden))
    for i in range(int(config["num_hidden_layers"])):
        p = f"model.layers.{i}"
        yield Tensor(f"{p}.input_layernorm.weight", dt, (hidden,))
        if fused:
            yield from linear(f"{p}.self_attn.qkv_proj", hidden, (heads + 2 * kv_heads) * head_dim)
        else:
            yield from linear(f"{p}.self_attn.q_proj", hidden, heads * head_dim, bias=qkv_bias)
            yield from linear(f"{p}.self_attn.k_proj", hidden, kv_heads * head_dim, bias=qkv_bias)
            yield from linear(f"{p}.self_attn.v_proj", hidden, kv_heads * head_dim, bias=qkv_bias)
        yield from linear(f"{p}.self_attn.o_proj", heads * head_dim, hidden)
        if model_type == "qwen3":
            yield Tensor(f"{p}.self_attn.q_norm.weight", dt, (head_dim,))
            yield Tensor(f"{p}.self_attn.k_norm.weight", dt, (head_dim,))
        yield Tensor(f"{p}.post_attention_layernorm.weight", dt, (hidden,))
        if fused:
            yield from linear(f"{p}.mlp.gate_up_proj", hidden, 2 * inter)
        else:
            yield from linear(f"{p}.mlp.gate_proj", hidden, inter)
            yield from linear(f"{p}.mlp.up_proj", hidden, inter)
        yield from linear(f"{p}.mlp.down_proj", inter, hidden)
    yield Tensor("model.norm.weight", dt, (hidden,))
    if not config.get("tie_word_embeddings"):
        yield Tensor("lm_head.weight", dt, (vocab, hidden))


def _linear_maker(config: Mapping[str, Any], dt: str, *, scale_dtype: str | None = None) -> Any:
    """A function (name, in, out, bias) -> tensors, for the checkpoint's quantization.

    Block-FP8 scales are in ``scale_dtype`` (default: the checkpoint's dtype, as in Qwen3 FP8; DeepSeek-V3
    stores them as F32)."""
    quant = config.get("quantization_config") or {}
    method = quant.get("quant_method")

    def plain(name: str, n_in: int, n_out: int, *, bias: bool = False) -> Iterator[Tensor]:
        yield Tensor(f"{name}.weight", dt, (n_out, n_in))
        if bias:
            yield Tensor(f"{name}.bias", dt, (n_out,))

    def awq(name: str, n_in: int, n_out: int, *, bias: bool = False) -> Iterator[Tensor]:
        pack = 32 // int(quant["bits"])
        group = int(quant["group_size"])
        yield Tensor(f"{name}.qweight", "I32", (n_in, n_out // pack))
        yield Tensor(f"{name}.qzeros", "I32", (n_in // group, n_out // pack))
        yield Tensor(f"{name}.scales", "F16", (n_in // group, n_out))
        if bias:
            yield Tensor(f"{name}.bias", "F16", (n_out,))

    def fp8_block(name: str, n_in: int, n_out: int, *, bias: bool = False) -> Iterator[Tensor]:
        bo, bi = (int(x) for x in quant["weight_block_size"])
        yield Tensor(f"{name}.weight", "F8_E4M3", (n_out, n_in))
        scales = (math.ceil(n_out / bo), math.ceil(n_in / bi))
        yield Tensor(f"{name}.weight_scale_inv", scale_dtype or dt, scales)
        if bias:
            yield Tensor(f"{name}.bias", dt, (n_out,))

    if method == "awq":
        return awq
    if method == "fp8":
        return fp8_block
    if method:
        raise UnknownArchitectureError(f"no tensor layout for quant_method {method!r}")
    return plain


def _deepseek_v3(config: Mapping[str, Any]) -> Iterator[Tensor]:
    """DeepSeek-V3's checkpoint: MLA attention (low-rank q and kv with their norms), dense MLP in the first
    ``first_k_dense_replace`` layers then MoE (router with its F32 correction bias, routed and shared
    experts), and ``num_nextn_predict_layers`` MTP layers after the main ones, each with its own copy of
    the embedding and the output head."""
    dt = _float_dtype(config)
    hidden = int(config["hidden_size"])
    heads = int(config["num_attention_heads"])
    q_rank, kv_rank = int(config["q_lora_rank"]), int(config["kv_lora_rank"])
    nope, rope, v_dim = (int(config[k]) for k in ("qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"))
    vocab = int(config["vocab_size"])
    layers = int(config["num_hidden_layers"])
    linear = _linear_maker(config, dt, scale_dtype="F32")

    def mlp(prefix: str, inter: int) -> Iterator[Tensor]:
        yield from linear(f"{prefix}.gate_proj", hidden, inter)
        yield from linear(f"{prefix}.up_proj", hidden, inter)
        yield from linear(f"{prefix}.down_proj", inter, hidden)

    def layer(i: int) -> Iterator[Tensor]:
        p = f"model.layers.{i}"
        yield Tensor(f"{p}.input_layernorm.weight", dt, (hidden,))
        yield from linear(f"{p}.self_attn.q_a_proj", hidden, q_rank)
        yield Tensor(f"{p}.self_attn.q_a_layernorm.weight", dt, (q_rank,))
        yield from linear(f"{p}.self_attn.q_b_proj", q_rank, heads * (nope + rope))
        yield from linear(f"{p}.self_attn.kv_a_proj_with_mqa", hidden, kv_rank + rope)
        yield Tensor(f"{p}.self_attn.kv_a_layernorm.weight", dt, (kv_rank,))
        yield from linear(f"{p}.self_attn.kv_b_proj", kv_rank, heads * (nope + v_dim))
        yield from linear(f"{p}.self_attn.o_proj", heads * v_dim, hidden)
        yield Tensor(f"{p}.post_attention_layernorm.weight", dt, (hidden,))
        moe = i >= int(config["first_k_dense_replace"]) and i % int(config.get("moe_layer_freq", 1)) == 0
        if not moe:
            yield from mlp(f"{p}.mlp", int(config["intermediate_size"]))
            return
        experts, expert_inter = int(config["n_routed_experts"]), int(config["moe_intermediate_size"])
        yield Tensor(f"{p}.mlp.gate.weight", dt, (experts, hidden))
        yield Tensor(f"{p}.mlp.gate.e_score_correction_bias", "F32", (experts,))
        for e in range(experts):
            yield from mlp(f"{p}.mlp.experts.{e}", expert_inter)
        yield from mlp(f"{p}.mlp.shared_experts", expert_inter * int(config.get("n_shared_experts") or 1))

    yield Tensor("model.embed_tokens.weight", dt, (vocab, hidden))
    for i in range(layers):
        yield from layer(i)
    yield Tensor("model.norm.weight", dt, (hidden,))
    yield Tensor("lm_head.weight", dt, (vocab, hidden))
    for i in range(layers, layers + int(config.get("num_nextn_predict_layers") or 0)):
        p = f"model.layers.{i}"
        yield Tensor(f"{p}.embed_tokens.weight", dt, (vocab, hidden))
        yield Tensor(f"{p}.enorm.weight", dt, (hidden,))
        yield Tensor(f"{p}.hnorm.weight", dt, (hidden,))
        yield Tensor(f"{p}.eh_proj.weight", dt, (hidden, 2 * hidden))
        yield from layer(i)
        yield Tensor(f"{p}.shared_head.norm.weight", dt, (hidden,))
        yield Tensor(f"{p}.shared_head.head.weight", dt, (vocab, hidden))


def _encoder(
    config: Mapping[str, Any], *, prefix: str, pooler: bool, classifier: bool = False
) -> Iterator[Tensor]:
    dt = _float_dtype(config)
    hidden = int(config["hidden_size"])
    inter = int(config["intermediate_size"])
    e = f"{prefix}embeddings"
    yield Tensor(f"{e}.word_embeddings.weight", dt, (int(config["vocab_size"]), hidden))
    yield Tensor(f"{e}.position_embeddings.weight", dt, (int(config["max_position_embeddings"]), hidden))
    yield Tensor(f"{e}.token_type_embeddings.weight", dt, (int(config.get("type_vocab_size", 2)), hidden))
    yield Tensor(f"{e}.LayerNorm.weight", dt, (hidden,))
    yield Tensor(f"{e}.LayerNorm.bias", dt, (hidden,))

    def dense(name: str, n_in: int, n_out: int) -> Iterator[Tensor]:
        yield Tensor(f"{name}.weight", dt, (n_out, n_in))
        yield Tensor(f"{name}.bias", dt, (n_out,))

    for i in range(int(config["num_hidden_layers"])):
        p = f"{prefix}encoder.layer.{i}"
        for part in ("query", "key", "value"):
            yield from dense(f"{p}.attention.self.{part}", hidden, hidden)
        yield from dense(f"{p}.attention.output.dense", hidden, hidden)
        yield Tensor(f"{p}.attention.output.LayerNorm.weight", dt, (hidden,))
        yield Tensor(f"{p}.attention.output.LayerNorm.bias", dt, (hidden,))
        yield from dense(f"{p}.intermediate.dense", hidden, inter)
        yield from dense(f"{p}.output.dense", inter, hidden)
        yield Tensor(f"{p}.output.LayerNorm.weight", dt, (hidden,))
        yield Tensor(f"{p}.output.LayerNorm.bias", dt, (hidden,))
    if pooler:
        yield from dense(f"{prefix}pooler.dense", hidden, hidden)
    if classifier:
        labels = len(config.get("id2label") or {"0": "LABEL_0"})
        yield from dense("classifier.dense", hidden, hidden)
        yield from dense("classifier.out_proj", hidden, labels)
