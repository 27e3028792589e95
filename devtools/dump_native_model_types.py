"""Write ``controller/model_facts/native-model-types.json`` from the pinned vLLM release.

    python -m devtools.dump_native_model_types     # the pinned release (shared/runtime_images.py)

The file lists the ``config.json`` ``model_type`` values the runtime loads without the repository's
own code (``controller.model_facts.remote_code``): transformers' ``CONFIG_MAPPING_NAMES`` at the
least transformers version the pinned vLLM requires (an image may ship any version in the range,
and the least one knows the fewest types), and vLLM's own config registry (``_CONFIG_REGISTRY`` in
``vllm/transformers_utils/config.py``). Both are read from the real packages in the cached vLLM
environment (devtools/cluster/components/vllm_cpu.py); the least transformers is installed, with the
huggingface_hub it asks for and without other dependencies, into a temporary directory put first on
``PYTHONPATH`` for that one read.
"""

from __future__ import annotations

import json
import pathlib
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from typing import Any

from devtools.cluster.components import vllm_cpu
from devtools.cluster.config import REPO

OUT = REPO / "controller" / "model_facts" / "native-model-types.json"

_TRANSFORMERS_SCRIPT = """
import json, transformers
from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES
print(json.dumps({"version": transformers.__version__, "types": sorted(CONFIG_MAPPING_NAMES)}))
"""
_VLLM_SCRIPT = """
import importlib.metadata as m, json
from vllm.transformers_utils.config import _CONFIG_REGISTRY
print(json.dumps({"version": m.version("vllm-cpu"), "requires": m.requires("vllm-cpu") or [],
                  "types": sorted(_CONFIG_REGISTRY)}))
"""


def least_transformers(requires: Iterable[str]) -> str:
    """The lower bound of vLLM's ``transformers`` requirement (``transformers<5.20.0,>=5.16.1`` -> 5.16.1)."""
    for req in requires:
        name = re.match(r"[A-Za-z0-9_.-]+", req)
        if name and name.group(0).lower() == "transformers" and ";" not in req:
            found = re.search(r">=\s*([0-9][0-9A-Za-z.]*)", req)
            if found:
                return found.group(1)
    raise ValueError(f"no lower bound on transformers among {list(requires)}")


def hub_requirement(metadata: str) -> str:
    """transformers' own ``huggingface-hub`` requirement, from its wheel's METADATA."""
    for line in metadata.splitlines():
        if line.startswith("Requires-Dist:") and ";" not in line:
            req = line.removeprefix("Requires-Dist:").strip()
            if re.match(r"huggingface[-_]hub\b", req, re.IGNORECASE):
                return req.replace(" ", "")
    raise ValueError("transformers names no huggingface-hub requirement")


def transformers_types(python: str, version: str) -> list[str]:
    """``CONFIG_MAPPING_NAMES`` of transformers ``version``, imported from a temporary directory with
    the huggingface_hub it asks for (the vLLM environment's may be newer than it accepts)."""
    with tempfile.TemporaryDirectory(prefix="transformers-") as target:
        pip = [python, "-m", "pip", "install", "-q", "--no-deps", "--target", target]
        subprocess.run([*pip, f"transformers=={version}"], check=True)
        (meta,) = pathlib.Path(target).glob("transformers-*.dist-info/METADATA")
        subprocess.run([*pip, hub_requirement(meta.read_text())], check=True)
        proc = subprocess.run(
            [python, "-c", _TRANSFORMERS_SCRIPT],
            capture_output=True,
            text=True,
            env={"PYTHONPATH": target, "PATH": "/usr/bin:/bin"},
            check=False,
        )
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr[-3000:])
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    if got["version"] != version:
        raise RuntimeError(f"read transformers {got['version']}, not {version}")
    return [str(t) for t in got["types"]]


def document(
    vllm: str, transformers: str, transformers_types: list[str], vllm_types: list[str]
) -> dict[str, object]:
    """The JSON written (the shape ``controller.model_facts.remote_code`` reads)."""
    return {
        "about": (
            f"config.json model_type values the vLLM {vllm} image loads without the repository's own code: "
            f"transformers {transformers} (the least vLLM {vllm} requires) CONFIG_MAPPING_NAMES in "
            "transformers/models/auto/configuration_auto.py, and vLLM's own _CONFIG_REGISTRY in "
            "vllm/transformers_utils/config.py. A config with `auto_map` and a model_type outside these "
            "needs --trust-remote-code. Written by python -m devtools.dump_native_model_types."
        ),
        "transformers": transformers,
        "vllm": vllm,
        "transformers_model_types": sorted(set(transformers_types)),
        "vllm_model_types": sorted(set(vllm_types)),
    }


def _run(python: str, script: str) -> Any:
    proc = subprocess.run([python, "-c", script], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr[-3000:])
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> int:
    env = vllm_cpu.locate()
    python = str(env.python)
    got = _run(python, _VLLM_SCRIPT)
    least = least_transformers(str(r) for r in got["requires"])
    types = transformers_types(python, least)
    doc = document(str(got["version"]), least, types, list(got["types"]))
    OUT.write_text(json.dumps(doc, indent=0) + "\n")
    print(f"{OUT}: {len(types)} transformers {least} types, {len(got['types'])} vLLM types")
    return 0


if __name__ == "__main__":
    sys.exit(main())
