"""Run a rendered ``model-fetcher`` init container as a local process, as the pod would run it.

Only what differs on this machine is replaced: ``python3`` by the interpreter of ``bin_dir`` (by
default this interpreter's; ``bin_dir``, which holds ``hf``, goes first on ``PATH``: pass a
``devtools.hf_cli`` venv's to run the CLI of the huggingface_hub an image ships), ``/models/model``
by a local directory, ``HOME``, the Hub endpoint, the metrics address (loopback, a given port; 0
picks a free one), and Secret references by the values of ``secrets`` (``{(name, key): value}``).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from shared import names


def fetcher_command(
    container: dict[str, Any],
    *,
    local_dir: Path,
    home: Path,
    hf_endpoint: str,
    port: int = 0,
    bin_dir: Path | None = None,
    secrets: Mapping[tuple[str, str], str] | None = None,
) -> tuple[list[str], dict[str, str]]:
    """The fetcher's command line and environment on this machine."""
    assert container["name"] == names.FETCHER_CONTAINER
    bin_dir = bin_dir or Path(sys.executable).parent
    python = str(bin_dir / "python3") if bin_dir != Path(sys.executable).parent else sys.executable
    command = [python if c == "python3" else c for c in container["command"]]
    args = [str(local_dir) if a == f"{names.MODEL_MOUNT_PATH}/model" else a for a in container["args"]]
    assert str(local_dir) in args, args
    env = {e["name"]: e["value"] for e in container["env"] if "value" in e}
    for e in container["env"]:
        ref = e.get("valueFrom", {}).get("secretKeyRef")
        if ref is not None:
            env[e["name"]] = (secrets or {})[(ref["name"], ref["key"])]
    env |= {
        "HF_ENDPOINT": hf_endpoint,
        "HOME": str(home),
        "MODEL_FETCHER_METRICS_HOST": "127.0.0.1",
        "MODEL_FETCHER_METRICS_PORT": str(port),
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    return [*command, *args], env


def start_fetcher(
    container: dict[str, Any], *, local_dir: Path, home: Path, hf_endpoint: str, port: int = 0
) -> tuple[subprocess.Popen[str], str]:
    """Start the fetcher; returns the process and the host:port its metric answers on."""
    argv, env = fetcher_command(container, local_dir=local_dir, home=home, hf_endpoint=hf_endpoint, port=port)
    log = home / "model-fetcher.log"  # hf's progress bars: a pipe nobody reads would fill and block it
    with log.open("w") as err:
        proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=err, text=True)
    assert proc.stdout is not None
    first = proc.stdout.readline()
    if not first.startswith("model-fetcher metrics on 127.0.0.1:"):
        proc.kill()
        proc.communicate()
        raise AssertionError(f"the fetcher did not start: {first!r} {log.read_text()[-2000:]}")
    return proc, first.split(" on ", 1)[1].strip()


def files_under(root: Path) -> dict[str, int]:
    """The files under ``root`` (its ``.cache`` aside), with their sizes."""
    return {
        str(p.relative_to(root)): p.stat().st_size
        for p in root.rglob("*")
        if p.is_file() and ".cache" not in p.relative_to(root).parts
    }
