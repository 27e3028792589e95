"""Run inside the pinned vLLM's environment (not this project's): each launch through vLLM's own checks.

Reads ``[{"id", "args", "env"}]`` as JSON on stdin and prints ``{id: {"stage", "message"}}`` as JSON on
the last line of stdout; ``stage`` is ``accepted`` or where vLLM refused the launch:

- ``parser``: ``vllm serve``'s parser (``make_arg_parser``): an unknown flag or a bad value;
- ``model``: ``EngineArgs.create_model_config()``: the ``ModelConfig`` validation against the model's
  own ``config.json`` (and ``sentence_bert_config.json``): ``--max-model-len`` within what the model
  derives, the architecture, the runner and convert for it, the quantization in the config;
- ``parallel``: ``ModelConfig.verify_with_parallel_config``: the tensor- and pipeline-parallel sizes
  against the model's heads and layers.

No weights are read: the model directory holds only the config files. The Ray executor of a
multi-node launch is not constructed (Ray is in the GPU image, not in the CPU wheel's environment); the
parallel sizes are checked all the same.
"""
# mypy: ignore-errors

from __future__ import annotations

import contextlib
import io
import json
import os
import sys


def main() -> None:
    cases = json.load(sys.stdin)
    from vllm.config import ParallelConfig
    from vllm.engine.arg_utils import AsyncEngineArgs
    from vllm.entrypoints.launchers.cli_args import make_arg_parser
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    out = {}
    for case in cases:
        saved = dict(os.environ)
        os.environ.update(case.get("env", {}))
        try:
            out[case["id"]] = check(
                case["args"], make_arg_parser, FlexibleArgumentParser, AsyncEngineArgs, ParallelConfig
            )
        finally:
            os.environ.clear()
            os.environ.update(saved)
    print(json.dumps(out))


def check(args, make_arg_parser, parser_class, engine_args, parallel_config):
    parser = make_arg_parser(parser_class(prog="vllm serve"))
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            ns = parser.parse_args(args)
    except SystemExit:
        return {"stage": "parser", "message": err.getvalue().strip().splitlines()[-1]}
    try:
        ea = engine_args.from_cli_args(ns)
        model = ea.create_model_config()
    except Exception as e:
        return {"stage": "model", "message": f"{type(e).__name__}: {e}"}
    try:
        model.verify_with_parallel_config(
            parallel_config(
                tensor_parallel_size=ea.tensor_parallel_size, pipeline_parallel_size=ea.pipeline_parallel_size
            )
        )
    except Exception as e:
        return {"stage": "parallel", "message": f"{type(e).__name__}: {e}"}
    return {"stage": "accepted", "message": f"max_model_len {model.max_model_len}"}


if __name__ == "__main__":
    main()
