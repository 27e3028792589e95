"""The fetcher's progress wrapper counts what the download has put on disk: the selected files and
huggingface_hub's partial downloads, never its own metadata or files the selection leaves out."""

from __future__ import annotations

from pathlib import Path

from controller.render.fetcher_program import bytes_done, option, patterns


def write(path: Path, size: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"\0" * size)


def test_selected_files_and_partial_downloads_count(tmp_path: Path) -> None:
    d = tmp_path / "model"
    write(d / "config.json", 100)
    write(d / "model-00001-of-00002.safetensors", 1000)
    write(d / "1_Pooling" / "config.json", 10)
    write(d / "original" / "consolidated.00.pth", 50_000)  # left by an earlier selection: not selected
    partial = d / ".cache" / "huggingface" / "download"
    write(partial / "abc.etag1.incomplete", 700)
    write(partial / "1_Pooling" / "def.etag2.incomplete", 7)
    write(partial / "config.json.metadata", 90)
    write(partial / "config.json.lock", 0)
    include = ["config.json", "model-[0-9][0-9][0-9][0-9][0-9]-of-00002.safetensors", "1_Pooling/config.json"]
    assert bytes_done(str(d), include) == 100 + 1000 + 10 + 700 + 7
    assert bytes_done(str(d), []) == 100 + 1000 + 10 + 50_000 + 700 + 7  # no pattern: every file
    assert bytes_done(str(tmp_path / "absent"), include) == 0


def test_options_are_read_from_the_hf_command_line() -> None:
    argv = ["hf", "download", "org/repo", "--local-dir", "/models/model", "--include", "a", "--include=b"]
    assert option(argv, "--local-dir") == ["/models/model"]
    assert option(argv, "--include") == ["a", "b"]
    assert option(argv, "--revision") == []


def test_the_patterns_are_the_positional_arguments_after_the_repository() -> None:
    argv = ["hf", "download", "org/repo", "a.json", "[-]b", "--local-dir", "/m", "--revision", "abc"]
    assert patterns(argv) == ["a.json", "[-]b"]
    # options anywhere, with or without values, are not patterns
    argv = ["hf", "download", "--local-dir=/m", "org/repo", "--quiet", "a", "--max-workers", "4", "b"]
    assert patterns(argv) == ["a", "b"]
    assert patterns(["hf", "download", "org/repo", "--local-dir", "/m"]) == []  # the whole repository
    assert patterns(["hf", "download", "org/repo", "--include", "x", "--local-dir", "/m"]) == ["x"]
