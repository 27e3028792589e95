"""Numbers a repository states about itself are checked before they are planned with (issue 21,
item 11): zero, negative or implausible values, and deep nesting, are refused naming the field."""

from __future__ import annotations

import struct
from typing import Any

import pytest

from controller.model_facts import ImplausibleModelError, model_facts, parse_gguf_header

CONFIG = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 4096,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "num_hidden_layers": 32,
    "max_position_embeddings": 8192,
    "torch_dtype": "bfloat16",
}
INFO = {
    "siblings": [
        {"rfilename": "model.safetensors", "size": 16_000_000_000},
        {"rfilename": "config.json", "size": 700},
    ],
    "safetensors": {"parameters": {"BF16": 8_000_000_000}},
}


def facts_of(config: dict[str, Any], info: dict[str, Any] = INFO) -> Any:
    return model_facts(repo_id="org/m", commit="c" * 40, info=info, config=config)


def test_a_sane_config_passes() -> None:
    assert facts_of(CONFIG).num_hidden_layers == 32


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"num_hidden_layers": -1_000_000}, "`num_hidden_layers` of `config.json` is -1000000"),
        ({"num_hidden_layers": 0}, "`num_hidden_layers` of `config.json` is 0"),
        ({"num_attention_heads": 0}, "`num_attention_heads`"),
        ({"hidden_size": 10**400}, "`hidden_size` of `config.json` is a 401-digit number"),
        ({"max_position_embeddings": -5}, "`max_position_embeddings`"),
        ({"head_dim": 2**40}, "`head_dim`"),
        ({"text_config": {"num_hidden_layers": -1}}, "`text_config.num_hidden_layers`"),
        (
            {"quantization_config": {"quant_method": "awq", "bits": 10**30, "group_size": 128}},
            "`quantization_config.bits`",
        ),
    ],
)
def test_an_impossible_number_is_refused_naming_the_field(changes: dict[str, Any], field: str) -> None:
    with pytest.raises(ImplausibleModelError, match="must be between") as err:
        facts_of({**CONFIG, **changes})
    assert field in str(err.value)


def test_an_impossible_published_count_or_size_is_refused() -> None:
    info = {**INFO, "safetensors": {"parameters": {"BF16": -8}}}
    with pytest.raises(ImplausibleModelError, match="parameter count"):
        facts_of(CONFIG, info)
    info = {**INFO, "siblings": [{"rfilename": "model.safetensors", "size": 10**30}]}
    with pytest.raises(ImplausibleModelError, match="size"):
        facts_of(CONFIG, info)


def test_values_of_the_wrong_type_do_not_crash_the_derivation() -> None:
    odd = {**CONFIG, "text_config": "x", "id2label": 5, "num_labels": 1e400}
    assert facts_of(odd).num_hidden_layers == 32


def test_a_gguf_header_of_deeply_nested_arrays_is_refused_not_a_recursion_error() -> None:
    key = b"tokenizer.nested"
    body = struct.pack("<Q", len(key)) + key + struct.pack("<I", 9)
    body += struct.pack("<IQ", 9, 1) * 10_000 + struct.pack("<IQ", 4, 0)
    data = b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + body
    with pytest.raises(ImplausibleModelError, match="arrays nest"):
        parse_gguf_header(data)


def test_gguf_header_numbers_are_checked_naming_the_file() -> None:
    info = {
        "siblings": [{"rfilename": "m-Q4_K_M.gguf", "size": 4_000_000_000}],
        "gguf": {"total": 8_000_000_000, "architecture": "llama"},
    }
    metadata = {"general.architecture": "llama", "llama.block_count": 0}
    with pytest.raises(
        ImplausibleModelError, match=r"`num_hidden_layers` of the GGUF header of `m-Q4_K_M\.gguf` is 0"
    ):
        model_facts(repo_id="org/m", commit="c" * 40, info=info, config=None, gguf_metadata=metadata)
