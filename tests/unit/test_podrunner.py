"""The pod runner (devtools/podrunner): a container's launch from the pod spec (pure), and the runner
with a shell "image" (needs root for ``unshare -m``): volumes at their mount paths in a private mount
namespace, a failing init container stops the pod, a dying container shows its exit code, and
``stop`` leaves no process of the group."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from devtools.podrunner import ImageRun, InitContainerError, LaunchError, PodObjects, PodRunner, plan_launch
from devtools.podrunner.launch import expand, listen, listen_port
from devtools.podrunner.runner import OMP_BIND_ENV, free_port, group_members, mount_script, process_argv

POD = PodObjects(
    name="p-0",
    namespace="team",
    secrets={"auth": {"token": "s3cret"}, "tls": {"tls.crt": "CERT", "tls.key": "KEY"}},
    config_maps={"cfg": {"mode": "fast"}},
)
IMAGES = {
    "vllm": ImageRun(
        entrypoint=("/venv/python", "-m", "api"), path=("/hf/bin",), env={"KV": "1", "HOME": "/x"}
    ),
    "sh": ImageRun(entrypoint=("/bin/sh", "-c")),
}


def never(_: int) -> bool:
    return False


def always(_: int) -> bool:
    return True


def test_the_launch_is_command_args_and_env_as_rendered() -> None:
    container: dict[str, Any] = {
        "name": "runtime",
        "image": "vllm",
        "args": [
            "--model",
            "/models/model",
            "--host",
            "0.0.0.0",
            "--port",
            "8443",
            "--x",
            "$(MODE)-$$(MODE)",
        ],
        "env": [
            {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "auth", "key": "token"}}},
            {"name": "MODE", "valueFrom": {"configMapKeyRef": {"name": "cfg", "key": "mode"}}},
            {"name": "NS", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
            {"name": "HOME", "value": "/home/inference"},
            {"name": "GONE", "valueFrom": {"secretKeyRef": {"name": "auth", "key": "x", "optional": True}}},
        ],
        "volumeMounts": [{"name": "tls", "mountPath": "/etc/tls", "readOnly": True}],
    }
    launch = plan_launch(container, POD, IMAGES, taken=never, free=lambda: 1)
    assert launch.argv == (
        "/venv/python",
        "-m",
        "api",
        "--model",
        "/models/model",
        "--host",
        "127.0.0.1",
        "--port",
        "8443",
        "--x",
        "fast-$(MODE)",
    )
    assert launch.env["TOKEN"] == "s3cret" and launch.env["MODE"] == "fast" and launch.env["NS"] == "team"
    assert launch.env["HOME"] == "/home/inference"  # the pod's, not the image's
    assert launch.env["KV"] == "1" and "GONE" not in launch.env
    assert launch.env["PATH"].startswith("/hf/bin:")
    assert launch.changes == ("--host 0.0.0.0 -> 127.0.0.1",)
    assert [(m.volume, m.path, m.read_only) for m in launch.mounts] == [("tls", "/etc/tls", True)]


def test_a_taken_port_gets_a_free_one_and_nothing_else_changes() -> None:
    argv, env, changes = listen(
        ["x", "--port", "8443"], {"MODEL_FETCHER_METRICS_PORT": "9090"}, taken=always, free=lambda: 4242
    )
    assert argv == ["x", "--port", "4242"]
    assert env == {"MODEL_FETCHER_METRICS_PORT": "4242", "MODEL_FETCHER_METRICS_HOST": "127.0.0.1"}
    assert len(changes) == 2


def test_a_missing_secret_key_or_image_is_refused() -> None:
    bad = {
        "name": "c",
        "image": "sh",
        "env": [{"name": "T", "valueFrom": {"secretKeyRef": {"name": "auth", "key": "no"}}}],
    }
    with pytest.raises(LaunchError, match="no key"):
        plan_launch(bad, POD, IMAGES, taken=never, free=lambda: 1)
    with pytest.raises(LaunchError, match="no local way"):
        plan_launch({"name": "c", "image": "nginx"}, POD, IMAGES, taken=never, free=lambda: 1)


def test_expand_follows_the_kubelet() -> None:
    assert expand("$(A)/$(B)/$$(A)", {"A": "1"}) == "1/$(B)/$(A)"


def test_the_mount_script_binds_parents_first_and_remounts_read_only(tmp_path: Path) -> None:
    container = {
        "name": "c",
        "image": "sh",
        "args": ["true"],
        "volumeMounts": [
            {"name": "b", "mountPath": "/a/b", "readOnly": True},
            {"name": "a", "mountPath": "/a"},
        ],
    }
    launch = plan_launch(container, POD, IMAGES, taken=never, free=lambda: 1)
    script = mount_script(launch, {"a": tmp_path / "a", "b": tmp_path / "b"})
    lines = script.splitlines()
    assert lines.index(f"mount --bind {tmp_path / 'a'} /a") < lines.index(
        f"mount --bind {tmp_path / 'b'} /a/b"
    )
    assert "mount -o remount,bind,ro /a/b" in lines
    argv = process_argv(launch, {"a": tmp_path / "a", "b": tmp_path / "b"})
    assert argv[-3:] == ["/bin/sh", "-c", "true"]


needs_root = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("unshare") is None, reason="unshare -m needs root"
)
MOUNT = "/tmp/podrunner-unit-mount"  # a mount point of the test pod (created on the host, empty)


def shell_pod(init: str, main: str) -> dict[str, Any]:
    mounts = [
        {"name": "tls", "mountPath": f"{MOUNT}/tls", "readOnly": True},
        {"name": "work", "mountPath": MOUNT},
    ]
    return {
        "initContainers": [{"name": "init", "image": "sh", "args": [init], "volumeMounts": mounts}],
        "containers": [{"name": "main", "image": "sh", "args": [main], "volumeMounts": mounts}],
        "volumes": [
            {"name": "tls", "secret": {"secretName": "tls"}},
            {"name": "work", "emptyDir": {}},
        ],
    }


@needs_root
def test_the_runner_mounts_runs_reports_and_stops(tmp_path: Path) -> None:
    pod = shell_pod(
        f"cat {MOUNT}/tls/tls.crt > {MOUNT}/seen && ! touch {MOUNT}/tls/x",
        f"sleep 300 & sleep 301 & echo up > {MOUNT}/up; wait",
    )
    runner = PodRunner(pod, POD, IMAGES, workdir=tmp_path)
    try:
        runner.run_init(timeout=30)
        assert (runner.volumes["work"] / "seen").read_text() == "CERT"  # the Secret at its mount path
        assert not Path(MOUNT, "seen").exists()  # the host's directory stayed empty
        runner.start()
        deadline = time.monotonic() + 20
        while not (runner.volumes["work"] / "up").exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        (status,) = runner.statuses().values()
        assert status.running and len(group_members(status.pid)) >= 3
    finally:
        runner.stop(grace=5)
    assert group_members(status.pid) == []
    assert runner.statuses()["main"].exit_code == 128 + 15  # SIGTERM


@needs_root
def test_a_failing_init_container_stops_the_pod_and_a_dying_one_shows(tmp_path: Path) -> None:
    runner = PodRunner(shell_pod("echo nope; exit 3", "true"), POD, IMAGES, workdir=tmp_path / "a")
    with pytest.raises(InitContainerError, match="exited with 3") as err:
        runner.run_init(timeout=30)
    assert err.value.exit_code == 3 and "nope" in str(err.value)
    assert "main" not in runner.processes
    runner.stop()
    runner = PodRunner(shell_pod("true", "exit 7"), POD, IMAGES, workdir=tmp_path / "b")
    runner.run_init(timeout=30)
    runner.start()
    runner.processes["main"].wait(timeout=20)
    status = runner.statuses()["main"]
    assert not status.running and status.exit_code == 7
    runner.stop()


def test_a_secret_volume_has_the_kubelets_layout_and_updates_by_a_swap(tmp_path: Path) -> None:
    from devtools.podrunner import volumes

    src = {"secretName": "tls"}
    found, _ = volumes.materialize([{"name": "tls", "secret": src}], POD, tmp_path, {})
    into = found["tls"]
    first = (into / "..data").resolve()
    assert (into / "tls.crt").readlink() == Path("..data/tls.crt") and (
        into / "tls.crt"
    ).read_text() == "CERT"
    volumes.update(into, {"tls.crt": "NEW", "tls.key": "KEY2"}, src, what="Secret 'tls'")
    assert (into / "tls.crt").read_text() == "NEW" and (into / "tls.key").read_text() == "KEY2"
    assert (into / "..data").resolve() != first and not first.exists()  # the old directory is gone
    assert oct((into / "..data" / "tls.key").stat().st_mode & 0o777) == "0o600"


@needs_root
def test_two_pods_started_together_never_get_the_same_port(tmp_path: Path) -> None:
    """Two replicas of one order render the same ``--port``; neither has bound it when the second
    starts (vLLM binds after loading), so the runner itself must not hand the port out twice."""
    port = free_port()
    pod = {
        "containers": [{"name": "main", "image": "sh", "args": ["sleep 30", "--port", str(port)]}],
        "volumes": [],
    }
    first = PodRunner(pod, POD, IMAGES, workdir=tmp_path / "a")
    second = PodRunner(pod, POD, IMAGES, workdir=tmp_path / "b")
    try:
        first.start()
        second.start()
        ports = [listen_port(r.launches["main"]) for r in (first, second)]
        assert ports[0] == port and ports[1] not in (None, port), ports
        if len(os.sched_getaffinity(0)) > 1:  # each pod its own CPU for vLLM's OpenMP threads
            binds = [r.launches["main"].env[OMP_BIND_ENV] for r in (first, second)]
            assert binds[0] != binds[1], binds
            pids = [r.processes["main"].pid for r in (first, second)]
            assert [os.sched_getaffinity(p) for p in pids] == [{int(b)} for b in binds]
    finally:
        first.stop(grace=2)
        second.stop(grace=2)
    third = PodRunner(pod, POD, IMAGES, workdir=tmp_path / "c")
    try:
        third.start()
        assert listen_port(third.launches["main"]) == port  # released by the stopped pods
    finally:
        third.stop(grace=2)
