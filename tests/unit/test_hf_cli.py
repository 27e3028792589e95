"""devtools.hf_cli: a cached venv per huggingface_hub version, reused when built, built atomically.

The real build (``python -m devtools.hf_cli`` on an empty cache) is what
tests/integration/test_fetcher_hf_versions.py relies on; here the build steps are stood in for."""

from __future__ import annotations

import os
import pathlib
import subprocess
from typing import Any

import pytest

from devtools import hf_cli
from shared.runtime_images import SUPPORTED


def fake_venv(root: pathlib.Path, version: str, python: str) -> None:
    """What ``_build`` leaves: bin/hf with a shebang into ``root``, the dist-info of ``version``."""
    (root / "bin").mkdir(parents=True)
    (root / "bin" / "hf").write_text(f"#!{root}/bin/python\nimport sys\n")
    (root / "bin" / "activate").write_text(f'VIRTUAL_ENV="{root}"\n')
    (root / "bin" / "python").symlink_to(python)
    (root / "lib" / "python3.11" / "site-packages" / f"huggingface_hub-{version}.dist-info").mkdir(
        parents=True
    )


def test_the_versions_are_every_supported_images_and_the_last_0x() -> None:
    assert {r.huggingface_hub for r in SUPPORTED} <= set(hf_cli.VERSIONS)
    assert hf_cli.LAST_0X in hf_cli.VERSIONS
    assert list(hf_cli.VERSIONS) == sorted(hf_cli.VERSIONS, key=lambda v: [int(p) for p in v.split(".")])


def test_a_built_venv_is_reused_without_building(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_venv(tmp_path / "hf-cli-0.35.3", "0.35.3", "/usr/bin/python3")
    monkeypatch.setattr(hf_cli, "_build", lambda *a: pytest.fail("built again"))
    assert hf_cli.hf_cli("0.35.3", tmp_path) == tmp_path / "hf-cli-0.35.3" / "bin" / "hf"


def test_a_cold_build_lands_atomically_with_scripts_pointing_at_the_final_path(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[pathlib.Path] = []

    def build(tmp: pathlib.Path, version: str, python: str) -> None:
        assert not (tmp_path / f"hf-cli-{version}").exists()  # nothing at the final path mid-build
        assert (tmp_path / f"hf-cli-{version}.lock").exists()
        seen.append(tmp)
        fake_venv(tmp, version, python)

    (tmp_path / ".hf-cli-2.4.0.tmp-1").mkdir()  # an interrupted build of before
    monkeypatch.setattr(hf_cli, "_build", build)
    hf = hf_cli.hf_cli("2.4.0", tmp_path, python="/usr/bin/python3")
    final = tmp_path / "hf-cli-2.4.0"
    assert hf == final / "bin" / "hf"
    assert seen == [tmp_path / f".hf-cli-2.4.0.tmp-{os.getpid()}"]
    assert hf.read_text().splitlines()[0] == f"#!{final}/bin/python"
    assert (final / "bin" / "activate").read_text() == f'VIRTUAL_ENV="{final}"\n'
    assert os.readlink(final / "bin" / "python") == "/usr/bin/python3"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hf-cli-2.4.0", "hf-cli-2.4.0.lock"]


def test_a_failed_build_leaves_nothing_at_the_final_path(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def run(step: list[str], **_: Any) -> subprocess.CompletedProcess[str]:
        if "pip" in step:
            return subprocess.CompletedProcess(step, 1, "", "No matching distribution found")
        pathlib.Path(step[-1]).mkdir(parents=True)
        return subprocess.CompletedProcess(step, 0, "", "")

    monkeypatch.setattr(subprocess, "run", run)
    with pytest.raises(hf_cli.HfCliError, match="No matching distribution"):
        hf_cli.hf_cli("9.9.9", tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hf-cli-9.9.9.lock"]


def test_a_venv_of_another_version_does_not_count(tmp_path: pathlib.Path) -> None:
    fake_venv(tmp_path / "v", "0.36.2", "/usr/bin/python3")
    assert hf_cli.is_built(tmp_path / "v", "0.36.2")
    assert not hf_cli.is_built(tmp_path / "v", "0.35.3")
    assert not hf_cli.is_built(tmp_path / "absent", "0.36.2")
