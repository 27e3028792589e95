"""The images' install steps, run in a clean virtualenv (there is no Docker engine in CI).

Dockerfile.controller, Dockerfile.webhook and Dockerfile.activator build the project wheel and its dependencies' wheels in
a builder stage, then install only those wheels into python:3.11-slim. This test does the same in a
temporary directory: ``pip wheel --no-deps .``, ``pip wheel`` of the dependencies, a fresh venv,
``pip install --no-index --find-links``, and then every entry point must start (``--help``) from a
directory outside the source tree, so that nothing is imported from the checkout.
"""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys
import time

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOCKERFILES = {name: ROOT / f"Dockerfile.{name}" for name in ("controller", "webhook", "activator")}


def run(*args: str | pathlib.Path, cwd: pathlib.Path) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    proc = subprocess.run(
        [str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600, check=False
    )
    assert proc.returncode == 0, (
        f"{' '.join(map(str, args))} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
    )
    return proc.stdout


@pytest.mark.parametrize("name", sorted(DOCKERFILES))
def test_a_dockerfile_is_multi_stage_slim_and_non_root(name: str) -> None:
    text = DOCKERFILES[name].read_text()
    stages = re.findall(r"^FROM\s+(\S+)(?:\s+AS\s+(\S+))?", text, flags=re.MULTILINE)
    assert len(stages) == 2, "a builder stage and a final stage"
    assert stages[-1] == ("python:3.11-slim", ""), "the final stage is python:3.11-slim"
    final = text[text.rindex("\nFROM ") :]
    assert re.search(r"^USER 65532:65532$", final, flags=re.MULTILINE), "a non-root numeric user"
    assert "pip wheel --no-deps --wheel-dir /wheels ." in text
    assert "pip install --no-index --find-links=/wheels inference-control-plane" in final
    assert not re.search(r"\b(gcc|build-essential|apt-get)\b", final), "no compilers in the final stage"
    assert f'ENTRYPOINT ["python", "-m", "{name}"]' in final


def test_the_wheel_installs_into_a_clean_venv_and_every_entry_point_starts(tmp_path: pathlib.Path) -> None:
    start = time.monotonic()
    wheels = tmp_path / "wheels"
    run(sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--wheel-dir", wheels, ROOT, cwd=tmp_path)
    (wheel,) = wheels.glob("inference_control_plane-*.whl")
    run(sys.executable, "-m", "pip", "wheel", "-q", "--wheel-dir", wheels, wheel, cwd=tmp_path)
    built = time.monotonic()
    venv = tmp_path / "venv"
    run(sys.executable, "-m", "venv", venv, cwd=tmp_path)
    python = venv / "bin" / "python"
    run(
        python,
        "-m",
        "pip",
        "install",
        "-q",
        "--no-index",
        "--find-links",
        wheels,
        "inference-control-plane",
        cwd=tmp_path,
    )
    installed = time.monotonic()
    where = run(
        python,
        "-c",
        "import controller, webhook, activator, shared; print(controller.__file__)",
        cwd=tmp_path,
    )
    assert str(venv) in where, f"imported from outside the venv: {where}"
    for module in ("controller", "webhook", "activator"):
        out = run(python, "-m", module, "--help", cwd=tmp_path)
        assert f"python -m {module}" in out or "usage:" in out
    print(
        f"\npackaging: wheels {built - start:.1f}s, venv + install {installed - built:.1f}s, "
        f"total {time.monotonic() - start:.1f}s"
    )
