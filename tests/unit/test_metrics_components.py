"""Prometheus and KEDA (issue 22): pinned, built from their Go modules into the cache keyed by version,
and not part of the plane's default build (build.sh) yet."""

from __future__ import annotations

import pathlib
import shutil
import subprocess
from typing import Any

import pytest

from devtools.cluster import config, gomod
from devtools.cluster.components import keda, prometheus


@pytest.mark.parametrize(
    ("release", "module"),
    [("v3.16.0", "v0.316.0"), ("v3.0.1", "v0.300.1"), ("v3.5.2-rc.0", "v0.305.2-rc.0")],
)
def test_a_prometheus_3_release_is_its_v0_3xx_module_version(release: str, module: str) -> None:
    assert prometheus.module_version(release) == module


@pytest.mark.parametrize("bad", ["v2.53.0", "3.16.0", "v0.316.0", "v3.16", "v3.100.0", "v3.16.0 "])
def test_anything_but_a_prometheus_3_release_is_refused(bad: str) -> None:
    with pytest.raises(prometheus.PrometheusError, match=r"not a Prometheus 3\.x release"):
        prometheus.module_version(bad)


def test_both_are_pinned_in_versions_env() -> None:
    # Since issue 22 item 2 both are plane daemons started by the launcher (start(plane), ready(plane);
    # tests/integration/test_keda_plane.py runs them), no longer Target add-ons with stubbed verbs.
    pinned = config.versions()
    assert prometheus.version() == pinned["PROMETHEUS_VERSION"]
    assert keda.version() == pinned["KEDA_VERSION"]
    assert prometheus.module_version(prometheus.version()).startswith("v0.3")
    assert keda.version().startswith("v2.")


def test_ci_does_not_build_them_yet() -> None:
    text = (config.HERE / "build.sh").read_text().lower()
    assert "prometheus" not in text and "keda" not in text


def test_the_binaries_are_cached_by_version(tmp_path: pathlib.Path) -> None:
    env = {"INFERENCE_CACHE": str(tmp_path)}
    assert prometheus.bin_dir(pinned="v3.16.0", env=env) == tmp_path / "prometheus-v3.16.0" / "bin"
    assert keda.bin_dir(pinned="v2.21.0", env=env) == tmp_path / "keda-v2.21.0" / "bin"
    assert keda.bin_dir(pinned="v2.20.2", env=env) != keda.bin_dir(pinned="v2.21.0", env=env)


def test_the_version_stamps_are_upstreams() -> None:
    assert "github.com/prometheus/common/version.Version=3.16.0 " in prometheus.ldflags("v3.16.0")
    assert "github.com/kedacore/keda/v2/version.Version=v2.21.0 " in keda.ldflags("v2.21.0")
    assert set(keda.BINARIES) == {"keda", "keda-adapter", "keda-admission-webhooks"}


def test_the_go_build_is_niced_one_package_at_a_time_without_local_paths(tmp_path: pathlib.Path) -> None:
    argv = gomod.go_build_argv("example.com/m/cmd/x", tmp_path / "x", ldflags="-s -w", tags=("netgo",))
    assert argv[:3] == ["nice", "-n", "19"]
    assert argv[3:7] == ["go", "build", "-p", "1"]
    assert "-trimpath" in argv
    assert argv[argv.index("-tags") + 1] == "netgo"
    assert argv[argv.index("-o") + 1] == str(tmp_path / "x")
    assert argv[-1] == "example.com/m/cmd/x"
    assert "-tags" not in gomod.go_build_argv("p", tmp_path / "x")


def test_the_build_environment_ignores_the_callers_go_settings() -> None:
    env = gomod.build_env({"GOFLAGS": "-mod=mod", "GOWORK": "/x/go.work", "CGO_ENABLED": "1", "HOME": "/h"})
    assert env == {"GOFLAGS": "-buildvcs=false", "GOWORK": "off", "CGO_ENABLED": "0", "GO111MODULE": "on",
                   "HOME": "/h"}  # fmt: skip


def test_built_binaries_are_used_as_they_are(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env = {"INFERENCE_CACHE": str(tmp_path)}
    out = keda.bin_dir(pinned="v2.21.0", env=env)
    out.mkdir(parents=True)
    for name in keda.BINARIES:
        (out / name).write_text("")
    monkeypatch.setattr(shutil, "which", lambda _: None)  # no go: nothing may be built
    assert keda.build(pinned="v2.21.0", env=env) == out


def test_a_missing_binary_is_built_in_the_module_tree_and_renamed_into_place(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = {"INFERENCE_CACHE": str(tmp_path / "cache")}
    src = tmp_path / "module"
    out = prometheus.bin_dir(pinned="v3.16.0", env=env)
    out.mkdir(parents=True)
    (out / "promtool").write_text("kept")
    ran: list[tuple[list[str], Any]] = []

    def run(argv: list[str], **kw: Any) -> subprocess.CompletedProcess[str]:
        ran.append((argv, kw["cwd"]))
        pathlib.Path(argv[argv.index("-o") + 1]).write_text("built")
        return subprocess.CompletedProcess(argv, 0, "", "")

    monkeypatch.setattr(shutil, "which", lambda _: "/usr/bin/go")
    monkeypatch.setattr(
        gomod, "download_module", lambda m, v: src if (m, v) == (prometheus.MODULE, "v0.316.0") else None
    )
    monkeypatch.setattr(subprocess, "run", run)
    assert prometheus.build(pinned="v3.16.0", env=env) == out
    assert [(a[-1], cwd) for a, cwd in ran] == [(f"{prometheus.MODULE}/cmd/prometheus", src)]
    assert (out / "prometheus").read_text() == "built" and (out / "promtool").read_text() == "kept"
    assert not list(out.glob("*.tmp"))
    assert (tmp_path / "cache" / ".build.lock").exists()


def test_a_failed_build_leaves_no_binary(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env = {"INFERENCE_CACHE": str(tmp_path)}

    def run(argv: list[str], **kw: Any) -> subprocess.CompletedProcess[str]:
        pathlib.Path(argv[argv.index("-o") + 1]).write_text("partial")
        return subprocess.CompletedProcess(argv, 1, "", "cgo: C compiler not found")

    monkeypatch.setattr(shutil, "which", lambda _: "/usr/bin/go")
    monkeypatch.setattr(gomod, "download_module", lambda m, v: tmp_path)
    monkeypatch.setattr(subprocess, "run", run)
    with pytest.raises(keda.KedaError, match="C compiler not found"):
        keda.build(pinned="v2.21.0", env=env)
    assert not list(keda.bin_dir(pinned="v2.21.0", env=env).iterdir())
