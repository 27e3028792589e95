"""The components of the local plane share one shape: the daemons of ``PLANE`` and the add-ons alike
have a version, a build, a start and a ready (devtools/cluster/components/base.py)."""

from __future__ import annotations

import pathlib

import pytest

from devtools import procs
from devtools.cluster import config
from devtools.cluster.components import PLANE, cert_manager, kwok, lws
from devtools.cluster.components.base import Addon, Plane
from devtools.cluster.tuning import tuning


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
