"""The rendered model fetcher, run as rendered with the ``hf`` CLI of every huggingface_hub a supported
vLLM image ships (and the last 0.x), downloads exactly the files the runtime loads, from every
repository of the Hub mirror, the tiny real models included when they are built in the cache
(``python -m devtools.tiny_models``; served whole, so ``chat_template.jinja`` and the rest are real).

- **The CLIs** are ``devtools.hf_cli`` venvs (``hf-cli-<version>`` in the cache; built on a cold
  machine). The container's ``python3`` is that venv's and its ``bin`` leads ``PATH``, as the image's
  python and ``hf`` would (``tests.integration.fetcher_run``).
- **The mirror** serves the real file lists with every file cut to ``FILE_CAP`` bytes (same names,
  consistent sizes everywhere), so whole repositories download in seconds. Its tree listing comes
  in pages of ``TREE_PAGE`` entries, so huggingface_hub 1.x+ follows ``Link: rel="next"`` on the
  large repositories (0.3x lists with the model info's ``siblings``).
- **The command** is the fetcher init container ``render.pod.fetcher`` produces for the repository's
  facts (``facts_of`` of tests/unit/test_model_files.py, made from the real sizes), with
  ``--revision <commit>``; the order carries an ``authSecretRef``, which is resolved to the mirror's
  token as the kubelet would resolve it.

``test_the_old_repeated_include_downloads_only_the_last_pattern_on_0x`` keeps the failure this
replaced on record: the same container with repeated ``--include`` gets ``vocab.txt`` alone from
all-MiniLM-L6-v2 with huggingface_hub 0.3x, and exit code 0.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from controller import render
from controller.render.pod import fetcher
from devtools.hf_cli import VERSIONS, hf_cli
from shared import names
from standins.hub_mirror import DEFAULT_TOKEN, RunningMirror, start_mirror
from standins.hub_mirror.tiny import tiny_repos
from testkit.planner import inventory_of, plan, small_fleet
from tests.integration.fetcher_run import fetcher_command, files_under
from tests.unit.controller.builders import make_order
from tests.unit.controller.test_render import SETTINGS
from tests.unit.test_model_files import FACTS, facts_of

FILE_CAP = 4096
TREE_PAGE = 64
MINILM = "sentence-transformers/all-MiniLM-L6-v2"
SECRET = ("hf-token", "token")
TINY = tiny_repos()  # the tiny real models built in the cache; none where they are not built
ALL_FACTS = {**FACTS, **{rid: facts_of(repo) for rid, repo in TINY.items()}}


@pytest.fixture(scope="module")
def mirror() -> Iterator[RunningMirror]:
    with start_mirror(file_cap=FILE_CAP, tree_page=TREE_PAGE, tiny=True) as m:
        yield m


@pytest.fixture(scope="module", params=VERSIONS)
def hf_bin(request: pytest.FixtureRequest) -> Path:
    """The ``bin`` directory of the venv holding huggingface_hub ``request.param``'s ``hf``."""
    return hf_cli(request.param).parent


def rendered_fetcher(rid: str) -> dict[str, Any]:
    """The fetcher init container of an order for ``rid`` with a token Secret, at the facts' commit."""
    facts = ALL_FACTS[rid]
    order = make_order(
        spec={"model": {"ref": {"name": rid}, "authSecretRef": {"name": SECRET[0], "key": SECRET[1]}}}
    )
    outcome = plan(inventory_of(small_fleet()), FACTS[MINILM])  # any plan: the fetcher reads its image
    assert outcome.plan is not None
    container = fetcher(
        order, outcome.plan, SETTINGS, facts.revision, render.fetch_spec(facts, facts.revision)
    )
    assert container["name"] == names.FETCHER_CONTAINER
    return container


def run_fetcher(container: dict[str, Any], hf_bin: Path, mirror: RunningMirror, tmp: Path) -> dict[str, int]:
    """Run ``container`` to its end; the files it left in the model directory, with their sizes."""
    local_dir = tmp / "model"
    argv, env = fetcher_command(
        container,
        local_dir=local_dir,
        home=tmp,
        hf_endpoint=mirror.url,
        bin_dir=hf_bin,
        secrets={SECRET: DEFAULT_TOKEN},
    )
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return files_under(local_dir) if local_dir.exists() else {}


def test_the_fetcher_runs_the_venvs_hf_and_the_rendered_arguments(hf_bin: Path, tmp_path: Path) -> None:
    container = rendered_fetcher(MINILM)
    argv, env = fetcher_command(
        container,
        local_dir=tmp_path / "m",
        home=tmp_path,
        hf_endpoint="http://x",
        bin_dir=hf_bin,
        secrets={SECRET: "t"},
    )
    assert argv[0] == str(hf_bin / "python3") and argv[3] == "hf"
    assert env["PATH"].startswith(f"{hf_bin}:") and env["HF_TOKEN"] == "t"
    assert argv[4:] == [str(tmp_path / "m") if a == "/models/model" else a for a in container["args"]]
    assert "--include" not in argv


@pytest.mark.parametrize("rid", sorted(ALL_FACTS))
def test_the_rendered_fetcher_downloads_exactly_the_selection(
    hf_bin: Path, mirror: RunningMirror, rid: str, tmp_path: Path
) -> None:
    def tree_pages() -> int:
        return sum(1 for r in mirror.requests() if r.kind == "tree" and f"/api/models/{rid}/tree/" in r.path)

    before = tree_pages()
    got = run_fetcher(rendered_fetcher(rid), hf_bin, mirror, tmp_path)
    assert set(got) == set(ALL_FACTS[rid].files)
    assert got == {name: mirror.repos[rid].files[name].size for name in got}
    if rid in TINY:  # real files, every byte
        assert all((tmp_path / "model" / n).read_bytes() == TINY[rid].files[n].head for n in got)
    if not hf_bin.parent.name.startswith("hf-cli-0."):  # 1.x+ lists the tree, page by page
        entries = len(mirror.repos[rid].tree(recursive=True) or [])
        assert tree_pages() - before == -(-entries // TREE_PAGE)


def test_the_old_repeated_include_downloads_only_the_last_pattern_on_0x(
    hf_bin: Path, mirror: RunningMirror, tmp_path: Path
) -> None:
    container = rendered_fetcher(MINILM)
    args = container["args"]
    cut = args.index("--local-dir")
    old = ["download", MINILM, *args[cut:]]
    for pattern in args[2:cut]:
        old += ["--include", pattern]
    got = run_fetcher({**container, "args": old}, hf_bin, mirror, tmp_path)
    version = hf_bin.parent.name.removeprefix("hf-cli-")
    if version.startswith("0."):
        assert set(got) == {args[cut - 1]} == {"vocab.txt"}
    else:
        assert set(got) == set(FACTS[MINILM].files)
