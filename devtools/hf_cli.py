"""huggingface_hub's ``hf`` CLI of a given version, in a cached virtual environment of its own.

The model fetcher runs the ``hf download`` of the huggingface_hub its vLLM image ships
(``shared.runtime_images``), and that CLI's options changed across releases (0.3x keeps only the
last of repeated ``--include`` options). Tests and the local plane therefore run the fetcher with
each of those versions, not with the project's own huggingface_hub.

**Layout** (the cache root of ``devtools.cluster.config.cache_root``, by default
``~/.cache/inference-control-plane``):

- ``hf-cli-<version>/`` a venv holding ``huggingface_hub==<version>`` and its dependencies as pip
  resolves them; ``hf-cli-<version>/bin/hf`` is the CLI;
- ``hf-cli-<version>.lock`` the lock builders of that version take (``flock``), so that two processes
  never build the same venv at once and a second one reuses what the first built.

**Atomic build**: the venv is made in ``.hf-cli-<version>.tmp-<pid>``, huggingface_hub installed there
and checked (``importlib.metadata`` must report exactly ``<version>``), the build path in its
``bin/`` scripts (shebangs, ``activate``) rewritten to the final path, and the directory renamed into
place. A venv counts as built when ``bin/hf`` and the ``huggingface_hub-<version>.dist-info`` are
there; an interrupted build leaves only a ``.tmp-`` directory, which the next build removes.

``python -m devtools.hf_cli [VERSION ...]`` builds (or finds) the venvs of ``VERSIONS`` (or those
given) and prints one ``VERSION PATH-OF-hf`` line each.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import os
import pathlib
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator

from devtools.cluster.config import cache_root
from shared.runtime_images import SUPPORTED

LAST_0X = "0.36.2"
"""The last huggingface_hub before 1.0: the newest 0.x CLI an older vLLM image can carry."""

VERSIONS: tuple[str, ...] = tuple(
    sorted({r.huggingface_hub for r in SUPPORTED} | {LAST_0X}, key=lambda v: tuple(map(int, v.split("."))))
)
"""The huggingface_hub versions the fetcher is tested with: every supported image's, and ``LAST_0X``."""


class HfCliError(RuntimeError):
    """The venv of a huggingface_hub version could not be built."""


def venv_dir(version: str, cache: pathlib.Path | None = None) -> pathlib.Path:
    return (cache or cache_root()) / f"hf-cli-{version}"


def hf_path(version: str, cache: pathlib.Path | None = None) -> pathlib.Path:
    """Where the ``hf`` CLI of ``version`` is once built (``hf_cli`` builds it)."""
    return venv_dir(version, cache) / "bin" / "hf"


def is_built(venv: pathlib.Path, version: str) -> bool:
    """Whether ``venv`` holds the ``hf`` CLI of exactly ``version`` (see the module doc)."""
    if not (venv / "bin" / "hf").is_file():
        return False
    return any(venv.glob(f"lib/python*/site-packages/huggingface_hub-{version}.dist-info"))


def relocate_scripts(bin_dir: pathlib.Path, old: str, new: str) -> int:
    """Rewrite ``old`` (the build path) to ``new`` in the text files of ``bin_dir``; how many changed.
    Binaries and symbolic links (``python``) are left alone."""
    changed = 0
    for script in sorted(bin_dir.iterdir()):
        if script.is_symlink() or not script.is_file():
            continue
        try:
            text = script.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        if old in text:
            script.write_text(text.replace(old, new), encoding="utf-8")
            changed += 1
    return changed


@contextlib.contextmanager
def _locked(path: pathlib.Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def hf_cli(version: str, cache: pathlib.Path | None = None, *, python: str = sys.executable) -> pathlib.Path:
    """The ``hf`` CLI of huggingface_hub ``version``, built into the cache first when it is not there.
    ``python`` makes the venv (a CPython 3.9+; the project's own by default)."""
    root = cache or cache_root()
    final = venv_dir(version, root)
    if is_built(final, version):
        return final / "bin" / "hf"
    with _locked(root / f"hf-cli-{version}.lock"):
        if is_built(final, version):  # another process built it while this one waited
            return final / "bin" / "hf"
        for stale in root.glob(f".hf-cli-{version}.tmp-*"):
            shutil.rmtree(stale, ignore_errors=True)
        if final.exists():  # something else is in the way (a build of an older layout): start over
            shutil.rmtree(final)
        tmp = root / f".hf-cli-{version}.tmp-{os.getpid()}"
        try:
            _build(tmp, version, python)
            relocate_scripts(tmp / "bin", str(tmp), str(final))
            tmp.rename(final)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    if not is_built(final, version):
        raise HfCliError(f"{final} does not hold huggingface_hub {version} after the build")
    return final / "bin" / "hf"


def _build(tmp: pathlib.Path, version: str, python: str) -> None:
    venv_python = str(tmp / "bin" / "python")
    install = ["install", "--disable-pip-version-check", "-q", f"huggingface_hub=={version}"]
    steps = [
        [python, "-m", "venv", str(tmp)],
        [venv_python, "-m", "pip", *install],
        [venv_python, "-c", "import importlib.metadata as m; print(m.version('huggingface_hub'))"],
    ]
    for step in steps:
        done = subprocess.run(step, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise HfCliError(f"{' '.join(step)} exited {done.returncode}: {done.stderr[-2000:]}")
    if done.stdout.strip() != version:
        raise HfCliError(f"pip installed huggingface_hub {done.stdout.strip()}, not {version}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m devtools.hf_cli", description=__doc__.split("\n\n")[0])
    parser.add_argument("versions", nargs="*", default=list(VERSIONS), help=f"default: {' '.join(VERSIONS)}")
    args = parser.parse_args(argv)
    for version in args.versions:
        began = time.monotonic()
        path = hf_cli(version)
        print(f"{version} {path} ({time.monotonic() - began:.1f} s)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
