"""The model fetcher downloads only what the runtime loads, and the model volume holds it.

Every repository of the Hub mirror (real file lists, with the duplicates real repositories carry)
is resolved to its facts; the selection, the fetcher's file patterns and the volume's size are
checked against it. ``test_hf_download_fetches_exactly_the_selection`` runs the real ``hf download``
CLI of this venv (huggingface_hub 2.4) with the rendered arguments (``--dry-run``) against the
mirror; tests/integration/test_fetcher_hf_versions.py downloads with every supported image's CLI.
"""

from __future__ import annotations

import fnmatch
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from controller.model_facts import model_facts, parse_gguf_header, sibling_sizes
from controller.model_facts.facts import ModelFacts
from controller.model_facts.files import runtime_files, total_bytes
from controller.planner.volume import volume_bytes, volume_quantity
from controller.render.fetch import (
    FetchSpec,
    cli_patterns,
    compact,
    download_args,
    escape,
    fetch_spec,
    include_patterns,
)
from shared.quantity import parse_bytes
from standins.hub_mirror import DEFAULT_TOKEN, RunningMirror, start_mirror
from standins.hub_mirror.repos import Repo, load_repos

REPOS = load_repos()
DUPLICATES = (".bin", ".pt", ".pth", ".onnx", ".msgpack", ".h5", ".ot", ".imatrix")
LLAMA_8B = "meta-llama/Llama-3.1-8B-Instruct"
MISTRAL = "mistralai/Mistral-7B-Instruct-v0.3"
MINILM = "sentence-transformers/all-MiniLM-L6-v2"
GGUF = "bartowski/Meta-Llama-3.1-8B-Instruct-GGUF"


def facts_of(repo: Repo) -> ModelFacts:
    """The facts the Hub client derives (published parameter counts; no tensor headers needed here)."""
    gguf = next((f for name, f in repo.files.items() if name.endswith(".gguf")), None)
    return model_facts(
        repo_id=repo.repo_id,
        commit=repo.sha,
        info=repo.info(blobs=True),
        config=repo.facts.get("config"),
        gguf_metadata=parse_gguf_header(gguf.head) if gguf is not None and gguf.head else None,
    )


FACTS = {rid: facts_of(repo) for rid, repo in REPOS.items()}


def repo_bytes(rid: str) -> int:
    return sum(f.size for f in REPOS[rid].files.values())


@pytest.mark.parametrize("rid", sorted(REPOS))
def test_the_selection_holds_the_weights_configs_and_tokenizer_and_no_duplicate(rid: str) -> None:
    facts, repo = FACTS[rid], REPOS[rid]
    chosen = set(facts.files)
    assert chosen <= set(repo.files)
    assert not [n for n in chosen if n.startswith(("original/", "consolidated"))]
    assert not [n for n in chosen if n.endswith(DUPLICATES)]
    weights = [n for n in chosen if n.endswith((".safetensors", ".gguf"))]
    assert weights and sum(repo.files[n].size for n in weights) == facts.weights_bytes
    for name in ("config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json"):
        assert (name in chosen) == (name in repo.files), name
    if facts.format == "GGUF":
        assert weights == ["Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf"]
    elif len(weights) > 1:
        assert "model.safetensors.index.json" in chosen


def test_llama_leaves_out_metas_original_checkpoint() -> None:
    chosen = set(FACTS[LLAMA_8B].files)
    assert chosen == {
        "config.json",
        "generation_config.json",
        "model-00001-of-00004.safetensors",
        "model-00002-of-00004.safetensors",
        "model-00003-of-00004.safetensors",
        "model-00004-of-00004.safetensors",
        "model.safetensors.index.json",
        "special_tokens_map.json",
        "tokenizer.json",
        "tokenizer_config.json",
    }
    left_out = repo_bytes(LLAMA_8B) - (total_bytes(FACTS[LLAMA_8B].files) or 0)
    assert left_out > 16_060_617_592  # original/consolidated.00.pth


def test_mistral_leaves_out_consolidated_safetensors_and_its_own_tokenizer_copy() -> None:
    chosen = set(FACTS[MISTRAL].files)
    assert "consolidated.safetensors" not in chosen
    assert {"model-00001-of-00003.safetensors", "tokenizer.model"} <= chosen
    assert not {"params.json", "tokenizer.model.v3"} & chosen


def test_sentence_transformers_keep_the_modules_vllm_reads_and_leave_the_other_exports() -> None:
    chosen = set(FACTS[MINILM].files)
    assert {"modules.json", "config_sentence_transformers.json", "1_Pooling/config.json"} <= chosen
    assert {"model.safetensors", "vocab.txt"} <= chosen
    assert not {"pytorch_model.bin", "onnx/model.onnx", "rust_model.ot", "tf_model.h5"} & chosen


def test_remote_code_files_come_only_for_a_model_that_needs_them() -> None:
    files: dict[str, int | None] = {
        "model.safetensors": 10,
        "config.json": 1,
        "modeling_x.py": 2,
        "README.md": 3,
    }
    assert "modeling_x.py" not in runtime_files(files, fmt="Safetensors")
    assert "modeling_x.py" in runtime_files(files, fmt="Safetensors", remote_code=True)


def test_a_repository_with_only_a_consolidated_file_serves_that() -> None:
    assert list(runtime_files({"consolidated.safetensors": 5, "config.json": 1}, fmt="Safetensors")) == [
        "config.json",
        "consolidated.safetensors",
    ]


# ---- the fetcher's globs


@pytest.mark.parametrize("rid", sorted(REPOS))
def test_the_include_globs_match_exactly_the_selection(rid: str) -> None:
    """``snapshot_download`` keeps a file when ``fnmatchcase`` holds for one glob."""
    patterns = include_patterns(FACTS[rid])
    kept = {n for n in REPOS[rid].files if any(fnmatch.fnmatchcase(n, p) for p in patterns)}
    assert kept == set(FACTS[rid].files)


def test_a_complete_shard_series_is_one_glob() -> None:
    patterns = include_patterns(FACTS["meta-llama/Llama-3.1-405B-Instruct"])
    assert "model-[0-9][0-9][0-9][0-9][0-9]-of-00191.safetensors" in patterns
    assert len(patterns) < 10
    assert compact(["model-00001-of-00002.safetensors"]) == ["model-00001-of-00002.safetensors"]


def test_glob_characters_in_a_name_match_only_themselves() -> None:
    name = "weird[1]*?.json"
    assert fnmatch.fnmatchcase(name, escape(name))
    assert not fnmatch.fnmatchcase("weird1x.json", escape(name))


def test_the_patterns_are_positional_a_lone_one_twice_and_a_leading_dash_escaped() -> None:
    """A lone positional is a file name to every ``hf download`` (``hf_hub_download``), two or more are
    patterns (``snapshot_download``); an argument starting with ``-`` would be read as an option."""
    assert (
        cli_patterns(["model-[0-9][0-9][0-9][0-9][0-9]-of-00002.safetensors"])
        == ["model-[0-9][0-9][0-9][0-9][0-9]-of-00002.safetensors"] * 2
    )
    assert cli_patterns(["-x.json", "a-b.json"]) == ["[-]x.json", "a-b.json"]
    assert fnmatch.fnmatchcase("-x.json", "[-]x.json") and not fnmatch.fnmatchcase("[-]x.json", "[-]x.json")
    assert cli_patterns([]) == []
    spec = FetchSpec(repo="org/m", revision="abc", include=("config.json", "model.safetensors"))
    assert download_args(spec, "/models/model") == [
        "download",
        "org/m",
        "config.json",
        "model.safetensors",
        "--local-dir",
        "/models/model",
        "--revision",
        "abc",
    ]
    whole = FetchSpec(repo="org/m", revision=None, include=())
    assert download_args(whole, "/d") == ["download", "org/m", "--local-dir", "/d"]


def test_every_sentence_transformers_config_vllm_reads_is_selected() -> None:
    """vLLM reads the first of seven ``sentence_*_config.json`` it finds (``max_seq_length``...)."""
    variants = ["bert", "roberta", "distilbert", "camembert", "albert", "xlm-roberta", "xlnet"]
    names = [f"sentence_{v}_config.json" for v in variants]
    files: dict[str, int | None] = {
        "model.safetensors": 10,
        "config.json": 1,
        "sentence_other_config.json": 1,
    }
    files |= dict.fromkeys(names, 1)
    assert set(runtime_files(files, fmt="Safetensors")) == {"model.safetensors", "config.json", *names}
    fallback = include_patterns(ModelFacts(source="Catalog", name="m", revision="r", parameter_count=1))
    assert set(names) <= set(fallback)


def test_a_catalog_model_downloads_its_source_location_with_the_usual_files() -> None:
    facts = ModelFacts(
        source="Catalog",
        name="qwen",
        revision="abc",
        parameter_count=7,
        source_uri="hf://Qwen/Qwen2.5-7B-Instruct",
    )
    spec = fetch_spec(facts, "abc")
    assert (spec.repo, spec.revision) == ("Qwen/Qwen2.5-7B-Instruct", "abc")
    files = REPOS["Qwen/Qwen2.5-7B-Instruct"].files
    kept = {n for n in files if any(fnmatch.fnmatchcase(n, p) for p in spec.include)}
    assert kept == set(FACTS["Qwen/Qwen2.5-7B-Instruct"].files)
    kept = {n for n in REPOS[LLAMA_8B].files if any(fnmatch.fnmatchcase(n, p) for p in spec.include)}
    assert kept == set(FACTS[LLAMA_8B].files)  # original/ stays out without a listing too


# ---- the volume


@pytest.mark.parametrize("rid", sorted(REPOS))
def test_the_volume_holds_the_selected_files_with_a_margin(rid: str) -> None:
    facts = FACTS[rid]
    selected = total_bytes(facts.files)
    assert selected is not None
    request = parse_bytes(volume_quantity(facts))
    assert request >= volume_bytes(facts) >= selected * 1.1
    if rid in (LLAMA_8B, MISTRAL, GGUF):
        assert request < repo_bytes(rid)  # the whole repository would not fit: it is not downloaded


def test_without_sizes_the_volume_falls_back_to_the_weights_estimate() -> None:
    facts = FACTS[LLAMA_8B].model_copy(update={"files": {}})
    assert volume_bytes(facts) >= (FACTS[LLAMA_8B].weights_bytes or 0) * 1.1


# ---- the real CLI against the mirror


@pytest.fixture(scope="module")
def mirror() -> Iterator[RunningMirror]:
    with start_mirror() as m:
        yield m


@pytest.mark.parametrize("rid", [LLAMA_8B, MISTRAL, MINILM, GGUF])
def test_hf_download_fetches_exactly_the_selection(mirror: RunningMirror, rid: str, tmp_path: Path) -> None:
    """``hf download`` of huggingface_hub's CLI with the fetcher's arguments, as a dry run."""
    spec = fetch_spec(FACTS[rid], REPOS[rid].sha)
    args = [*download_args(spec, str(tmp_path / "model")), "--dry-run", "--format", "json"]
    hf = Path(sys.executable).with_name("hf")
    env = {
        **os.environ,
        "HF_ENDPOINT": mirror.url,
        "HF_TOKEN": DEFAULT_TOKEN,
        "HF_HUB_DISABLE_TELEMETRY": "1",
        "HOME": str(tmp_path),
    }
    done = subprocess.run([str(hf), *args], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    listed: Any = json.loads(done.stdout)
    assert {item["file"] for item in listed} == set(FACTS[rid].files)


def test_sibling_sizes_are_what_the_selection_is_made_from() -> None:
    info = REPOS[LLAMA_8B].info(blobs=True)
    assert sibling_sizes(info)["original/consolidated.00.pth"] == 16_060_617_592
