"""The flags vLLM's own argument parser accepts, frozen per vLLM version, and the check of a runtime
container's args against them.

``vllm-flags-<version>.json`` beside this file lists every option string of ``vllm serve`` at that
release, read from vLLM's real parser (``python -m devtools.dump_vllm_flags``; the file says how). The runtime stand-in refuses
to "start" an order whose args carry any other flag, as ``vllm serve`` does (``unrecognized
arguments``), so every end-to-end order exercises the launch plan against the real parser's flags.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable
from pathlib import Path

_DIR = Path(__file__).parent
_TAG = re.compile(r":v?(\d+\.\d+\.\d+)(?:[-@].*)?$")
_SHORT_WITH_VALUE = re.compile(r"^(-[A-Za-z])\d")  # argparse: `-O3` is `-O 3`


def frozen_versions() -> list[str]:
    return sorted(p.stem.removeprefix("vllm-flags-") for p in _DIR.glob("vllm-flags-*.json"))


@functools.cache
def accepted_flags(version: str) -> frozenset[str]:
    """Every option string ``vllm serve`` of ``version`` accepts; KeyError when none is frozen."""
    path = _DIR / f"vllm-flags-{version}.json"
    if not path.exists():
        raise KeyError(f"no frozen flag list for vLLM {version} (have {', '.join(frozen_versions())})")
    return frozenset(json.loads(path.read_text())["flags"])


def image_version(image: str) -> str | None:
    """``vllm/vllm-openai:v0.11.0`` -> ``0.11.0``; None for an image without a release tag."""
    m = _TAG.search(image)
    return m.group(1) if m else None


def flag_name(arg: str) -> str | None:
    """The option an argument names (``--max_model_len=8`` -> ``--max-model-len``); None for a value."""
    if not arg.startswith("-") or arg == "-" or re.fullmatch(r"-\d[\d.e+-]*", arg):
        return None
    name = arg.split("=", 1)[0]
    if name.startswith("--"):
        return "--" + name[2:].replace("_", "-")
    m = _SHORT_WITH_VALUE.match(name)
    return m.group(1) if m else name


def unknown_flags(args: Iterable[str], accepted: frozenset[str]) -> list[str]:
    """The flags in ``args`` that the parser would refuse, in order."""
    out: list[str] = []
    for arg in args:
        name = flag_name(arg)
        if name is not None and name not in accepted and name not in out:
            out.append(name)
    return out


def refusal(image: str, args: Iterable[str]) -> str | None:
    """What ``vllm serve`` of the image's version would say about ``args``; None when it accepts them.

    Only vLLM images (``vllm`` in the repository name) are checked: the stand-in models no other runtime.
    """
    if "vllm" not in image.rsplit(":", 1)[0].lower():
        return None
    version = image_version(image)
    if version is None:
        return f"cannot tell the vLLM version of image {image!r}: tag it with a release (vX.Y.Z)"
    try:
        accepted = accepted_flags(version)
    except KeyError as e:
        return str(e.args[0])
    unknown = unknown_flags(args, accepted)
    if unknown:
        return f"vllm serve: error: unrecognized arguments: {' '.join(unknown)}"
    return None
