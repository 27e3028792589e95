"""model_facts: Hub model info + config.json + safetensors tensors -> ModelFacts, on real models.

The expected figures are the published ones (model cards and the Hub's model info, see
standins/hub_data/README.md), not outputs of the code under test.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

import pytest

from controller.model_facts import (
    ImplausibleModelError,
    ModelFactsError,
    Quantization,
    endpoint_types,
    gguf_quantization,
    model_facts,
    parse_gguf_header,
    pick_gguf,
    quantization,
)
from controller.model_facts.sentence import sentence_config_files
from testkit.mirror_facts import REPOS, facts_of, gguf_metadata_of, tensors_of  # noqa: F401


@dataclass(frozen=True)
class Expected:
    repo_id: str
    endpoint_types: tuple[str, ...]
    format: str
    quantization: str
    parameter_count: int
    context_length: int
    layers: int | None
    kv_heads: int | None
    head_dim: int | None
    torch_dtype: str | None
    architecture: str


CASES = [
    Expected("Qwen/Qwen2.5-32B-Instruct-AWQ", ("Chat",), "Safetensors", "awq-4bit", 32_763_876_352, 32768,
             64, 8, 128, "float16", "Qwen2ForCausalLM"),
    Expected("Qwen/Qwen2.5-7B-Instruct", ("Chat",), "Safetensors", "none", 7_615_616_512, 32768,
             28, 4, 128, "bfloat16", "Qwen2ForCausalLM"),
    Expected("Qwen/Qwen2.5-0.5B-Instruct", ("Chat",), "Safetensors", "none", 494_032_768, 32768,
             24, 2, 64, "bfloat16", "Qwen2ForCausalLM"),
    Expected("meta-llama/Llama-3.1-8B", ("Chat",), "Safetensors", "none", 8_030_261_248, 131072,
             32, 8, 128, "bfloat16", "LlamaForCausalLM"),
    Expected("meta-llama/Llama-3.1-8B-Instruct", ("Chat",), "Safetensors", "none", 8_030_261_248, 131072,
             32, 8, 128, "bfloat16", "LlamaForCausalLM"),
    Expected("meta-llama/Llama-3.1-70B-Instruct", ("Chat",), "Safetensors", "none", 70_553_706_496, 131072,
             80, 8, 128, "bfloat16", "LlamaForCausalLM"),
    Expected("meta-llama/Llama-3.1-405B-Instruct", ("Chat",), "Safetensors", "none", 405_853_388_800, 131072,
             126, 8, 128, "bfloat16", "LlamaForCausalLM"),
    # Logical parameters: the published 684,531,386,000 less the 41,540,496 F32 block scales (the 15,104
    # F32 router biases are parameters). MLA: vLLM caches one latent of kv_lora_rank + qk_rope_head_dim
    # = 576 per token and layer, as one KV head.
    Expected("deepseek-ai/DeepSeek-V3", ("Chat",), "Safetensors", "fp8", 684_489_845_504, 163840,
             61, 1, 576, "bfloat16", "DeepseekV3ForCausalLM"),
    Expected("mistralai/Mistral-7B-Instruct-v0.3", ("Chat",), "Safetensors", "none", 7_248_023_552, 32768,
             32, 8, 128, "bfloat16", "MistralForCausalLM"),
    Expected("microsoft/Phi-3-mini-4k-instruct", ("Chat",), "Safetensors", "none", 3_821_079_552, 4096,
             32, 32, 96, "bfloat16", "Phi3ForCausalLM"),
    Expected("Qwen/Qwen3-8B-FP8", ("Chat",), "Safetensors", "fp8", 8_190_735_360, 40960,
             36, 8, 128, "bfloat16", "Qwen3ForCausalLM"),
    Expected("BAAI/bge-large-en-v1.5", ("Embeddings",), "Safetensors", "none", 335_141_888, 512,
             24, 16, 64, "float32", "BertModel"),
    Expected("sentence-transformers/all-MiniLM-L6-v2", ("Embeddings",), "Safetensors", "none", 22_713_216, 512,
             6, 12, 32, "float32", "BertModel"),
    Expected("BAAI/bge-reranker-v2-m3", ("Rerank",), "Safetensors", "none", 567_755_777, 8192,
             24, 16, 64, "float32", "XLMRobertaForSequenceClassification"),
    Expected("bartowski/Meta-Llama-3.1-8B-Instruct-GGUF", ("Chat",), "GGUF", "gguf-4bit", 8_030_261_312, 131072,
             32, 8, 128, None, "LlamaForCausalLM"),
]  # fmt: skip


KNOWN_GAPS: dict[str, str] = {}


def with_gaps(cases: list[Expected]) -> list[Any]:
    """The cases, those with a known gap of the code as strict xfails."""
    return [
        pytest.param(c, id=c.repo_id, marks=pytest.mark.xfail(strict=True, reason=KNOWN_GAPS[c.repo_id]))
        if c.repo_id in KNOWN_GAPS
        else pytest.param(c, id=c.repo_id)
        for c in cases
    ]


def test_the_table_covers_every_repository_of_the_mirror() -> None:
    assert {c.repo_id for c in CASES} == set(REPOS)


@pytest.mark.parametrize("case", with_gaps(CASES))
def test_a_real_model_resolves_to_its_published_facts(case: Expected) -> None:
    facts = facts_of(case.repo_id)
    assert facts.endpoint_types == case.endpoint_types
    assert facts.format == case.format
    assert facts.quantization_label == case.quantization
    assert facts.parameter_count == case.parameter_count
    assert facts.context_length == case.context_length
    assert (facts.num_hidden_layers, facts.num_key_value_heads, facts.head_dim) == (
        case.layers,
        case.kv_heads,
        case.head_dim,
    )
    assert facts.torch_dtype == case.torch_dtype
    assert facts.architecture == case.architecture
    assert facts.revision == REPOS[case.repo_id].sha
    assert facts.source == "HuggingFace"


@pytest.mark.parametrize("case", CASES, ids=[c.repo_id for c in CASES])
def test_the_stored_dtype_counts_are_the_published_safetensors_parameters(case: Expected) -> None:
    facts = facts_of(case.repo_id)
    published = REPOS[case.repo_id].facts["published"].get("safetensors", {}).get("parameters", {})
    assert facts.parameter_dtype_counts == published


def test_gated_repositories_are_marked_gated() -> None:
    gated = {rid for rid in REPOS if facts_of(rid).gated}
    assert gated == {
        "meta-llama/Llama-3.1-8B",
        "meta-llama/Llama-3.1-8B-Instruct",
        "meta-llama/Llama-3.1-70B-Instruct",
        "meta-llama/Llama-3.1-405B-Instruct",
        "mistralai/Mistral-7B-Instruct-v0.3",
    }


def test_awq_without_tensor_headers_converts_the_published_packed_total_back_to_logical_parameters() -> None:
    facts = facts_of("Qwen/Qwen2.5-32B-Instruct-AWQ", with_tensors=False)
    assert facts.parameter_count == 32_763_876_352
    assert facts.parameter_dtype_counts == {"I32": 3_931_176_960, "F16": 1_802_048_512}


def test_an_unquantized_model_without_tensor_headers_uses_the_published_total() -> None:
    assert facts_of("Qwen/Qwen2.5-7B-Instruct", with_tensors=False).parameter_count == 7_615_616_512


def test_awq_group_size_and_bits_come_from_quantization_config() -> None:
    facts = facts_of("Qwen/Qwen2.5-32B-Instruct-AWQ")
    assert (facts.quantization, facts.quantization_bits, facts.quantization_group_size) == ("awq", 4, 128)


def test_weights_bytes_of_a_sharded_model_sum_the_shards_only() -> None:
    repo = REPOS["mistralai/Mistral-7B-Instruct-v0.3"]
    shards = [f for name, f in repo.files.items() if "-of-" in name]
    assert len(shards) == 3
    assert facts_of(repo.repo_id).weights_bytes == sum(f.size for f in shards)


def test_a_gguf_repository_serves_its_q4_k_m_file() -> None:
    facts = facts_of("bartowski/Meta-Llama-3.1-8B-Instruct-GGUF")
    assert facts.weights_bytes == REPOS[facts.name].files["Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf"].size
    assert (facts.quantization, facts.quantization_bits) == ("gguf", 4)


def test_the_runtime_is_pointed_at_the_gguf_file_not_at_the_directory() -> None:
    from controller.planner.vllm import MODEL_PATH, model_path

    facts = facts_of("bartowski/Meta-Llama-3.1-8B-Instruct-GGUF")
    assert model_path(facts) == f"{MODEL_PATH}/Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf"
    assert model_path(facts_of("Qwen/Qwen2.5-7B-Instruct")) == MODEL_PATH


def test_a_gguf_file_split_in_parts_is_never_chosen() -> None:
    files = {
        "m-Q4_K_M-00001-of-00002.gguf": 10,
        "m-Q4_K_M-00002-of-00002.gguf": 10,
        "m-Q8_0.gguf": 40,
    }
    assert pick_gguf(files) == ("m-Q8_0.gguf", 40)
    with pytest.raises(ModelFactsError, match="single-file GGUF"):
        pick_gguf({k: v for k, v in files.items() if "Q4" in k})


def test_a_repository_without_safetensors_or_gguf_files_is_refused() -> None:
    info = {"siblings": [{"rfilename": "pytorch_model.bin", "size": 10}, {"rfilename": "config.json"}]}
    with pytest.raises(ModelFactsError, match="neither safetensors nor GGUF"):
        model_facts(repo_id="x/y", commit="c", info=info, config={"architectures": ["GPT2LMHeadModel"]})


def make_types(**changes: Any) -> tuple[str, ...]:
    args: dict[str, Any] = {
        "architecture": None,
        "pipeline_tag": None,
        "tags": (),
        "filenames": ("config.json",),
        "config": {},
    }
    args.update(changes)
    return endpoint_types(**args)


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"architecture": "LlamaForCausalLM"}, ("Chat",)),
        ({"architecture": "LlavaForConditionalGeneration"}, ("Chat",)),
        ({"pipeline_tag": "text-generation"}, ("Chat",)),
        ({"tags": ("conversational",)}, ("Chat",)),
        ({"architecture": "BertModel", "pipeline_tag": "feature-extraction"}, ("Embeddings",)),
        ({"architecture": "BertModel", "pipeline_tag": "sentence-similarity"}, ("Embeddings",)),
        ({"architecture": "Qwen2Model", "filenames": ("modules.json", "config.json")}, ("Embeddings",)),
        ({"architecture": "Qwen2ForCausalLM", "filenames": ("config_sentence_transformers.json",)}, ("Embeddings",)),
        ({"pipeline_tag": "text-ranking"}, ("Rerank",)),
        (
            {"architecture": "XLMRobertaForSequenceClassification", "pipeline_tag": "text-classification",
             "config": {"id2label": {"0": "LABEL_0"}}},
            ("Rerank",),
        ),
        (
            {"architecture": "BertForSequenceClassification", "pipeline_tag": "text-classification",
             "config": {"id2label": {"0": "NEGATIVE", "1": "POSITIVE"}}},
            (),
        ),
        ({"architecture": "WhisperForAudioClassification"}, ()),
    ],
    ids=[
        "a causal LM is served as Chat",
        "a conditional-generation model is served as Chat",
        "the text-generation pipeline is Chat",
        "the conversational tag is Chat",
        "feature-extraction is Embeddings",
        "sentence-similarity is Embeddings",
        "sentence-transformers modules.json is Embeddings",
        "a causal LM packaged for sentence-transformers is Embeddings",
        "the text-ranking pipeline is Rerank",
        "a one-label sequence classifier is a cross-encoder: Rerank",
        "a two-label sentiment classifier is not a reranker",
        "an unknown architecture offers no API",
    ],
)  # fmt: skip
def test_endpoint_types(changes: dict[str, Any], expected: tuple[str, ...]) -> None:
    assert make_types(**changes) == expected


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        (None, Quantization()),
        ({"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": False}, Quantization("gptq", 4, 128)),
        ({"quant_method": "gptq", "bits": 8, "group_size": -1}, Quantization("gptq", 8, None)),
        ({"quant_method": "fp8", "activation_scheme": "dynamic"}, Quantization("fp8", 8)),
        ({"quant_method": "bitsandbytes", "load_in_4bit": True}, Quantization("bitsandbytes", 4)),
        (
            {"quant_method": "compressed-tensors",
             "config_groups": {"group_0": {"weights": {"num_bits": 8, "type": "float", "group_size": None}}}},
            Quantization("compressed-tensors", 8, None),
        ),
    ],
    ids=["no config is unquantized", "GPTQ int4 g128", "GPTQ per-channel has no group", "FP8",
         "bitsandbytes 4-bit", "compressed-tensors FP8"],
)  # fmt: skip
def test_quantization_config(config: dict[str, Any] | None, expected: Quantization) -> None:
    assert quantization(config) == expected


@pytest.mark.parametrize(
    ("filename", "bits"),
    [
        ("m-Q4_K_M.gguf", 4),
        ("m.Q8_0.gguf", 8),
        ("m-IQ4_XS.gguf", 4),
        ("m-f16.gguf", 16),
        ("m-Q5_K_S.gguf", 5),
    ],
)
def test_gguf_bits_come_from_the_file_type_in_the_name(filename: str, bits: int) -> None:
    assert gguf_quantization(filename).bits == bits


def test_without_a_preferred_gguf_type_the_smallest_file_is_served() -> None:
    assert pick_gguf({"m-Q6_K.gguf": 60, "m-Q3_K_L.gguf": 40, "m-f16.gguf": 160}) == ("m-Q3_K_L.gguf", 40)


def gguf_bytes(*items: bytes) -> bytes:
    return b"GGUF" + struct.pack("<IQQ", 3, 0, len(items)) + b"".join(items)


def gguf_str(text: str) -> bytes:
    return struct.pack("<Q", len(text)) + text.encode()


def test_a_gguf_header_cut_short_keeps_the_keys_before_the_cut() -> None:
    arch = gguf_str("general.architecture") + struct.pack("<I", 8) + gguf_str("llama")
    layers = gguf_str("llama.block_count") + struct.pack("<II", 4, 32)
    tokens = gguf_str("tokenizer.ggml.tokens") + struct.pack("<IIQ", 9, 8, 3) + b"".join(map(gguf_str, "abc"))
    scores = gguf_str("tokenizer.ggml.scores") + struct.pack("<IIQ", 9, 6, 2) + struct.pack("<ff", 0.5, 0.25)
    data = gguf_bytes(arch, layers, tokens, scores)
    assert parse_gguf_header(data) == {
        "general.architecture": "llama",
        "llama.block_count": 32,
        "tokenizer.ggml.tokens": 3,
        "tokenizer.ggml.scores": 2,
    }
    assert parse_gguf_header(data[: len(data) - 5]) == {
        "general.architecture": "llama",
        "llama.block_count": 32,
        "tokenizer.ggml.tokens": 3,
    }


def test_bytes_that_are_not_gguf_are_refused() -> None:
    with pytest.raises(ModelFactsError, match="not a GGUF file"):
        parse_gguf_header(b"PK" + bytes(40))


def test_a_gguf_repository_without_a_readable_header_still_resolves_without_config_numbers() -> None:
    repo = REPOS["bartowski/Meta-Llama-3.1-8B-Instruct-GGUF"]
    facts = model_facts(repo_id=repo.repo_id, commit=repo.sha, info=repo.info(blobs=True), config=None)
    assert (facts.parameter_count, facts.context_length) == (8_030_261_312, 131072)
    assert (facts.num_hidden_layers, facts.num_key_value_heads) == (None, None)


def test_a_sentence_transformers_model_carries_its_max_seq_length() -> None:
    """all-MiniLM-L6-v2: 512 positions in config.json, 256 in sentence_bert_config.json (vLLM's cap)."""
    minilm = facts_of("sentence-transformers/all-MiniLM-L6-v2")
    assert (minilm.context_length, minilm.max_seq_length, minilm.serving_context) == (512, 256, 256)
    bge = facts_of("BAAI/bge-large-en-v1.5")
    assert (bge.max_seq_length, bge.serving_context) == (512, 512)
    qwen = facts_of("Qwen/Qwen2.5-7B-Instruct")
    assert (qwen.max_seq_length, qwen.serving_context) == (None, 32768)


def test_vllm_reads_the_root_sentence_configs_in_its_own_order() -> None:
    names = [
        "sentence_xlnet_config.json",
        "2_Dense/sentence_bert_config.json",
        "sentence_roberta_config.json",
        "sentence_bert_config.json",
    ]
    assert sentence_config_files(names) == [
        "sentence_bert_config.json",
        "sentence_roberta_config.json",
        "sentence_xlnet_config.json",
    ]


def minilm_with(sentence_config: Any) -> Any:
    repo = REPOS["sentence-transformers/all-MiniLM-L6-v2"]
    return model_facts(
        repo_id=repo.repo_id,
        commit=repo.sha,
        info=repo.info(blobs=True),
        config=repo.facts["config"],
        sentence_config=sentence_config,
    )


@pytest.mark.parametrize("value", ["256", 256.0, True, None, [256]])
def test_a_max_seq_length_that_is_not_an_integer_is_ignored(value: Any) -> None:
    facts = minilm_with({"max_seq_length": value})
    assert (facts.max_seq_length, facts.serving_context) == (None, 512)


@pytest.mark.parametrize("value", [0, -1, 2**40])
def test_a_max_seq_length_out_of_bounds_is_refused_naming_it(value: int) -> None:
    with pytest.raises(ImplausibleModelError, match="sentence-transformers `max_seq_length`"):
        minilm_with({"max_seq_length": value})


def test_a_max_seq_length_above_the_positions_leaves_the_positions() -> None:
    assert minilm_with({"max_seq_length": 4096}).serving_context == 512
