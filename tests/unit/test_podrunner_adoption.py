"""Which plane pods a real vLLM serves, and the status the plane runner reports for them
(devtools/podrunner/adoption.py, pure), on the fetcher arguments the controller really renders."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from controller.render.fetch import FetchSpec, download_args
from devtools.podrunner.adoption import (
    MAX_MODEL_BYTES,
    Download,
    Report,
    State,
    download_of,
    runs_here,
    selected_bytes,
    status_patch,
)
from shared import names, runtime_images

IMAGE = runtime_images.pinned().image
SIBLINGS = [
    {"rfilename": "model.safetensors", "size": 3_000_000},
    {"rfilename": "config.json", "size": 700},
    {"rfilename": "tokenizer.json", "size": 40_000},
    {"rfilename": "README.md", "size": 9_999_999},
    {"rfilename": "-odd.json", "size": 5},
]


def test_the_rendered_fetcher_arguments_name_the_repo_revision_and_patterns() -> None:
    spec = FetchSpec("org/m", "a" * 40, ("model.safetensors", "config.json", "-odd.json"))
    argv = ["hf", *download_args(spec, "/models")]
    assert download_of(argv) == Download(
        "org/m", "a" * 40, ("model.safetensors", "config.json", "[-]odd.json")
    )
    lone = ["hf", *download_args(FetchSpec("org/m", None, ("config.json",)), "/models")]
    assert download_of(lone) == Download("org/m", "main", ("config.json",))  # given twice, counted once
    assert download_of(
        ["hf", "download", "org/m", "--include", "*.json", "--quiet", "--local-dir=/m"]
    ) == Download("org/m", "main", ("*.json",))
    assert download_of(["hf", "upload", "org/m"]) is None
    assert download_of(["hf", "download", "--local-dir", "/m"]) is None


def test_the_selected_bytes_are_what_hf_download_would_fetch() -> None:
    assert selected_bytes(SIBLINGS, ["model.safetensors", "config.json", "tokenizer.json"]) == 3_040_700
    assert selected_bytes(SIBLINGS, ["[-]odd.json"]) == 5
    assert selected_bytes(SIBLINGS, ["*.json"]) == 40_705
    assert selected_bytes(SIBLINGS, []) == 3_000_000 + 700 + 40_000 + 9_999_999 + 5  # no pattern: everything
    assert selected_bytes([{"rfilename": "model.safetensors"}], ["*.safetensors"]) is None  # size unknown
    assert selected_bytes([{"rfilename": "x.bin"}], ["*.safetensors"]) == 0
    assert MAX_MODEL_BYTES == 64 * 1024 * 1024


def pod_spec(image: str = IMAGE, fetcher: bool = True) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "runtime", "image": image}]}
    if fetcher:
        spec["initContainers"] = [{"name": names.FETCHER_CONTAINER, "image": image}]
    return spec


def test_only_a_pinned_vllm_pod_with_the_fetcher_runs_here() -> None:
    assert runs_here(pod_spec(), IMAGE)
    assert not runs_here(pod_spec(image="vllm/vllm-openai:v0.11.0"), IMAGE)
    assert not runs_here(pod_spec(fetcher=False), IMAGE)
    assert not runs_here({"containers": [{"name": "main", "image": IMAGE}]}, IMAGE)


def live_pod(conditions: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {
        "spec": {
            "initContainers": [
                {"name": "model-fetcher", "image": IMAGE},
                {"name": "token-guard", "image": IMAGE},
            ],
            "containers": [{"name": "runtime", "image": IMAGE}],
        },
        "status": {"phase": "Running", "conditions": conditions or []},
    }


def conds(patch: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in patch["status"]["conditions"]}


def test_while_the_fetcher_runs_the_pod_is_not_initialized_and_not_ready() -> None:
    kwok_ready = [
        {"type": "PodScheduled", "status": "True", "lastTransitionTime": "T0"},
        {"type": "Ready", "status": "True", "lastTransitionTime": "T0"},
    ]
    report = Report({"model-fetcher": State("running", at="T1")}, {}, message="downloading")
    patch = status_patch(live_pod(kwok_ready), report, "T1")
    c = conds(patch)
    assert c["PodScheduled"] == kwok_ready[0]  # not ours: kept
    assert c["Ready"]["status"] == "False" and c["Ready"]["lastTransitionTime"] == "T1"
    assert c["Ready"]["reason"] == "ContainersNotInitialized" and c["Ready"]["message"] == "downloading"
    assert c["Initialized"]["status"] == "False"
    assert patch["status"]["phase"] == "Running"  # never Pending: KWOK's pod-ready would fire again
    fetcher, guard = patch["status"]["initContainerStatuses"]
    assert fetcher["state"] == {"running": {"startedAt": "T1"}} and fetcher["started"]
    assert guard["state"]["waiting"]["reason"] == "PodInitializing"
    (runtime,) = patch["status"]["containerStatuses"]
    assert runtime["state"]["waiting"]["reason"] == "PodInitializing" and not runtime["ready"]


def test_a_ready_runtime_makes_the_pod_ready_and_a_dead_one_shows_its_exit_code() -> None:
    done = {
        n: State("terminated", "Completed", exit_code=0, at="T1") for n in ("model-fetcher", "token-guard")
    }
    ready = status_patch(
        live_pod(), Report(done, {"runtime": State("running", at="T2")}, frozenset({"runtime"})), "T3"
    )
    assert {k: v["status"] for k, v in conds(ready).items()} == {
        "Initialized": "True",
        "ContainersReady": "True",
        "Ready": "True",
    }
    assert all(s["ready"] for s in ready["status"]["initContainerStatuses"])
    assert ready["status"]["containerStatuses"][0]["ready"]
    dead = Report(
        done,
        {"runtime": State("waiting", "CrashLoopBackOff", "back-off")},
        restarts={"runtime": 1},
        last={"runtime": State("terminated", "Error", exit_code=137, at="T4")},
    )
    patch = status_patch(live_pod(list(conds(ready).values())), dead, "T5")
    (runtime,) = patch["status"]["containerStatuses"]
    assert runtime["state"]["waiting"]["reason"] == "CrashLoopBackOff" and not runtime["ready"]
    assert runtime["lastState"]["terminated"]["exitCode"] == 137 and runtime["restartCount"] == 1
    c = conds(patch)
    assert c["Ready"]["status"] == "False" and c["Ready"]["reason"] == "ContainersNotReady"
    assert c["Initialized"] == conds(ready)["Initialized"]  # unchanged: its transition time stays


@pytest.mark.parametrize("code", [1, 3])
def test_a_failed_init_container_reports_its_exit_code(code: int) -> None:
    report = Report(
        {"model-fetcher": State("terminated", "Error", "boom", code, "T1")}, {}, restarts={"model-fetcher": 2}
    )
    fetcher = status_patch(live_pod(), report, "T1")["status"]["initContainerStatuses"][0]
    assert fetcher["state"]["terminated"] == {
        "exitCode": code,
        "reason": "Error",
        "finishedAt": "T1",
        "message": "boom",
    }
    assert not fetcher["ready"] and fetcher["restartCount"] == 2


def test_the_runners_routes_reach_the_stand_in_as_the_pods_go() -> None:
    """``plane.Routes`` against a real stand-in: a claim is an empty route (the stand-in answers
    nothing for the order), ready pods are its backends, each naming its pod (whose metrics the
    stand-in then takes from that process), a gone pod leaves, a gone order is dropped."""
    from devtools.podrunner.plane import Routes
    from standins.runtime import start_runtime

    with start_runtime() as rt:

        def routes() -> dict[str, tuple[list[str], dict[str, str]]]:
            listed = httpx.get(f"{rt.control_url}/_standin/routes", timeout=10).json()["routes"]
            return {f"{r['namespace']}/{r['name']}": (r["backends"], r.get("pods", {})) for r in listed}

        table = Routes(rt.control_url)
        order = ("team", "tiny")
        table.set(order, None, None)
        assert routes() == {"team/tiny": ([], {})}
        table.set(
            order, "uid-1", None, pod="tiny-a"
        )  # a pod, not ready: still claimed with nothing behind it
        assert routes() == {"team/tiny": ([], {})}
        table.set(order, "uid-1", "127.0.0.1:8443", pod="tiny-a")
        table.set(order, "uid-2", "127.0.0.1:9443", pod="tiny-b")
        assert routes() == {
            "team/tiny": (
                ["127.0.0.1:8443", "127.0.0.1:9443"],
                {"tiny-a": "127.0.0.1:8443", "tiny-b": "127.0.0.1:9443"},
            )
        }
        table.forget(order, "uid-1")
        assert routes() == {"team/tiny": (["127.0.0.1:9443"], {"tiny-b": "127.0.0.1:9443"})}
        table.set(order, "uid-3", "127.0.0.1:7443")  # no pod name: the old body shape, a bare address
        assert routes() == {"team/tiny": (["127.0.0.1:7443", "127.0.0.1:9443"], {"tiny-b": "127.0.0.1:9443"})}
        assert table.claimed() == [order]
        table.drop(order)
        assert routes() == {} and table.claimed() == []
