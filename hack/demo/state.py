"""``Demo``: every path and handle of one demo installation, and the demo's own state file."""

from __future__ import annotations

import json
import os
import pathlib
import sys
from dataclasses import dataclass, field
from typing import Any

from devtools.cluster import launcher
from devtools.cluster.components.base import run_kubectl
from devtools.cluster.config import P

ROOT = pathlib.Path(__file__).resolve().parents[2]


def say(msg: str) -> None:
    print(f"==> {msg}", flush=True)


@dataclass
class Demo:
    """Every path and handle of one demo installation."""

    root: pathlib.Path = ROOT
    state: pathlib.Path = field(
        default_factory=lambda: pathlib.Path(os.environ.get("INFERENCE_DEMO_DIR", ROOT / ".demo"))
    )
    python: str = sys.executable
    env: dict[str, str] = field(default_factory=lambda: dict(os.environ))

    @property
    def pki(self) -> pathlib.Path:
        return self.state / "pki"

    @property
    def kubeconfig(self) -> pathlib.Path:
        return P.kubeconfig

    def kubectl(self, *args: str, input: str | None = None, check: bool = True) -> str:
        return run_kubectl(self.bin_dir() / "kubectl", self.kubeconfig, *args, input=input, check=check)

    def bin_dir(self) -> pathlib.Path:
        cached = self.state / "bin-dir"
        if cached.exists():
            return pathlib.Path(cached.read_text().strip())
        bin_dir = launcher.build()
        self.state.mkdir(parents=True, exist_ok=True)
        cached.write_text(str(bin_dir))
        return bin_dir

    def write(self, name: str, value: object) -> None:
        path = self.state / "state.json"
        data = json.loads(path.read_text()) if path.exists() else {}
        data[name] = value
        path.write_text(json.dumps(data, indent=2))

    def read(self, name: str) -> Any:
        path = self.state / "state.json"
        return (json.loads(path.read_text()) if path.exists() else {}).get(name)
