"""``python -m devtools.tiny_models [--out DIR]``: build the tiny models that are missing (default:
the cache, ``~/.cache/inference-control-plane/tiny-models-1``). Needs transformers: run it with the
cached vLLM venv's python, with the repository on ``PYTHONPATH``."""

from __future__ import annotations

import argparse
from pathlib import Path

from devtools.tiny_models import MODELS, model_dir


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m devtools.tiny_models", description=__doc__)
    parser.add_argument("--out", type=Path, default=None, help="where to build (default: the cache)")
    args = parser.parse_args(argv)
    from devtools.tiny_models.build import main as build

    root = build(args.out)
    for model in MODELS:
        files = sorted(p for p in model_dir(model, root).rglob("*") if p.is_file())
        size = sum(p.stat().st_size for p in files)
        print(f"{model.repo_id}: {len(files)} files, {size} bytes in {model_dir(model, root)}")


if __name__ == "__main__":
    main()
