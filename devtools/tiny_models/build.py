"""Build the tiny models (needs torch, transformers and tokenizers: run it with the vLLM venv's python).

Deterministic: the weights come from a seeded generator, the tokenizers from a fixed word list (the
chat model's byte-level BPE is trained on a corpus made from it), and nothing reads the clock.
Each model is written to a temporary directory next to its final place and renamed into it, with
``hub.json`` written last, so a half-built model is never taken for a built one.
"""

from __future__ import annotations

import fcntl
import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from devtools.tiny_models import CHAT, EMBED, HUB_FACTS, MODELS, RERANK, TinyModel, cache_root, model_dir

SEED = 20261202

_WORD_TEXT = (
    "answer are assistant attention be bird blue cache cat chat city cluster controller cpu day do "
    "does dog eight fast five four gpu green has have health hello house inference is key kubernetes "
    "large layer made make memory metrics model moon mountain night nine node one order pod probe "
    "query question red reply request river runtime said say secret serves seven six slow small star "
    "sun system ten the three time tiny token tokens tree two user value was weights were world"
)
WORDS = tuple(_WORD_TEXT.split())
"""The vocabulary the tokenizers are made from (BERT: these words plus their characters)."""

LLAMA_SPECIALS = (
    "<|begin_of_text|>",
    "<|end_of_text|>",
    "<|start_header_id|>",
    "<|end_header_id|>",
    "<|eot_id|>",
)
BERT_SPECIALS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")

CHAT_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}<|start_header_id|>{{ message['role'] }}<|end_header_id|>\n\n"
    "{{ message['content'] | trim }}<|eot_id|>{% endfor %}{% if add_generation_prompt %}"
    "<|start_header_id|>assistant<|end_header_id|>\n\n{% endif %}"
)

LLAMA_VOCAB = 1024
BERT_SEQ = (
    128  # sentence_bert_config.json's max_seq_length: below max_position_embeddings, as in real ST models
)


def main(root: Path | None = None) -> Path:
    """Build every model missing under ``root`` (default: the cache); return ``root``."""
    root = root or cache_root()
    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        for model in MODELS:
            final = model_dir(model, root)
            if (final / HUB_FACTS).is_file():
                continue
            work = Path(tempfile.mkdtemp(prefix=f".{model.dir_name}.", dir=root))
            try:
                BUILDERS[model.name](work)
                _write_json(work / HUB_FACTS, _hub_facts(model))
                if final.exists():
                    shutil.rmtree(final)
                work.rename(final)
            finally:
                shutil.rmtree(work, ignore_errors=True)
    return root


def _hub_facts(model: TinyModel) -> dict[str, Any]:
    return {
        "id": model.repo_id,
        "pipeline_tag": model.pipeline_tag,
        "library_name": model.library_name,
        "tags": list(model.tags),
    }


def _write_json(path: Path, doc: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=2) + "\n")


def _corpus() -> Iterator[str]:
    """Sentences over ``WORDS`` and numbers: enough distinct pairs for 1024 byte-level BPE tokens."""
    n = len(WORDS)
    for i in range(n):
        for step in (1, 7, 13):
            yield " ".join(WORDS[(i + k * step) % n] for k in range(8)) + "."
    for i in range(4096):
        yield f"{WORDS[i % n].capitalize()} {i} and {i * 37 % 10007}?"


# ---------------------------------------------------------------- the chat model


def build_chat(out: Path) -> None:
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    bpe.post_processor = processors.TemplateProcessing(single="$A", pair="$A $B:1")
    trainer = trainers.BpeTrainer(
        vocab_size=LLAMA_VOCAB,
        special_tokens=list(LLAMA_SPECIALS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    bpe.train_from_iterator(_corpus(), trainer=trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe,
        bos_token=LLAMA_SPECIALS[0],
        eos_token=LLAMA_SPECIALS[4],
        pad_token=LLAMA_SPECIALS[1],
        model_max_length=2048,
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    config = LlamaConfig(
        vocab_size=LLAMA_VOCAB,
        hidden_size=256,
        intermediate_size=512,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=64,
        max_position_embeddings=2048,
        rms_norm_eps=1e-6,
        rope_parameters={"rope_type": "default", "rope_theta": 500000.0},
        bos_token_id=0,
        eos_token_id=[1, 4],
        pad_token_id=None,
        tie_word_embeddings=False,
    )
    torch.manual_seed(SEED)
    model = LlamaForCausalLM(config).to(torch.bfloat16)
    model.config.dtype = "bfloat16"
    model.generation_config = GenerationConfig(bos_token_id=0, eos_token_id=[1, 4], max_new_tokens=32)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)


# ---------------------------------------------------------------- the BERT models


def _bert_vocab() -> list[str]:
    chars = sorted(set("".join(WORDS)) | set("0123456789.!?"))
    return [*BERT_SPECIALS, *chars, *(f"##{c}" for c in chars), *sorted(WORDS)]


def _bert_tokenizer(out: Path) -> None:
    from transformers import BertTokenizer

    vocab_file = out / "vocab.txt"
    vocab_file.write_text("".join(f"{token}\n" for token in _bert_vocab()))
    tokenizer = BertTokenizer(vocab_file=str(vocab_file), do_lower_case=True, model_max_length=512)
    tokenizer.save_pretrained(out)


def _bert_config(**extra: Any) -> Any:
    from transformers import BertConfig

    return BertConfig(
        vocab_size=len(_bert_vocab()),
        hidden_size=128,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=256,
        max_position_embeddings=512,
        pad_token_id=0,
        **extra,
    )


def build_embed(out: Path) -> None:
    import torch
    from transformers import BertModel

    torch.manual_seed(SEED)
    BertModel(_bert_config()).save_pretrained(out)
    _bert_tokenizer(out)
    _write_json(
        out / "modules.json",
        [
            {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
            {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
            {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"},
        ],
    )
    _write_json(
        out / "1_Pooling" / "config.json",
        {
            "word_embedding_dimension": 128,
            "pooling_mode_cls_token": False,
            "pooling_mode_mean_tokens": True,
            "pooling_mode_max_tokens": False,
            "pooling_mode_mean_sqrt_len_tokens": False,
            "pooling_mode_weightedmean_tokens": False,
            "pooling_mode_lasttoken": False,
            "include_prompt": True,
        },
    )
    _write_json(out / "sentence_bert_config.json", {"max_seq_length": BERT_SEQ, "do_lower_case": False})
    _write_json(
        out / "config_sentence_transformers.json",
        {"__version__": {"sentence_transformers": "5.1.0"}, "prompts": {}, "similarity_fn_name": "cosine"},
    )


def build_rerank(out: Path) -> None:
    import torch
    from transformers import BertForSequenceClassification

    torch.manual_seed(SEED)
    BertForSequenceClassification(_bert_config(num_labels=1)).save_pretrained(out)
    _bert_tokenizer(out)


BUILDERS = {CHAT.name: build_chat, EMBED.name: build_embed, RERANK.name: build_rerank}
