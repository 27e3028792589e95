"""While the model fetcher runs, the order's WorkloadReady message says how far the download is; when
it stops, the message stops saying so (real plane, real controller, the real fetcher run locally).

The order lives in the namespace whose pods KWOK holds in their init phase
(``devtools.cluster.components.kwok_stages.HOLD_INIT_NAMESPACE``): its pod shows ``model-fetcher`` running. The
fetcher the controller applied (its command, arguments and environment, read back from the
Deployment) runs as a local process against a throttled Hub mirror, on the port the controller's
``modelFetcherMetricsAddressOverride`` points at. Then the pod is released and the order gets Ready.

A stray pod carrying the order's label, with a running ``model-fetcher`` and a name that sorts
first, is never scraped: only pods of the order's own ReplicaSet are (issue 21, item 3).
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

from devtools.cluster.components.kwok_stages import HOLD_INIT_NAMESPACE, INIT_RELEASE_ANNOTATION
from shared import names
from standins.hub_mirror import start_mirror
from testkit.platform import Platform, hf
from tests.integration.conftest import wait_for
from tests.integration.fetcher_run import files_under, start_fetcher

MINILM = "sentence-transformers/all-MiniLM-L6-v2"
THROTTLE = 3 * 2**20  # bytes per second per file: the ~87 MiB model file takes about 30 s
WAITING = "Waiting for a replica to become available."
_UNITS = {"KiB": 2**10, "MiB": 2**20, "GiB": 2**30}
_PROGRESS = re.compile(r"downloading the model: ([\d.]+) (KiB|MiB|GiB) of ([\d.]+) (KiB|MiB|GiB) \((\d+)%\)")


def workload_ready(p: Platform, ns: str, name: str) -> dict[str, Any]:
    return p.condition(p.order(ns, name), "WorkloadReady")


def fetching_pod(p: Platform, ns: str) -> str | None:
    """The pod whose model-fetcher init container is running, if any."""
    for pod in json.loads(p.kubectl("get", "pods", "-n", ns, "-o", "json").stdout)["items"]:
        for c in pod.get("status", {}).get("initContainerStatuses") or []:
            if c["name"] == "model-fetcher" and "running" in (c.get("state") or {}):
                return str(pod["metadata"]["name"])
    return None


def fetching_pods(p: Platform, ns: str) -> list[str]:
    out = []
    for pod in json.loads(p.kubectl("get", "pods", "-n", ns, "-o", "json").stdout)["items"]:
        for c in pod.get("status", {}).get("initContainerStatuses") or []:
            if c["name"] == "model-fetcher" and "running" in (c.get("state") or {}):
                out.append(str(pod["metadata"]["name"]))
    return out


def stray_pod(p: Platform, ns: str, order: str) -> None:
    """A tenant's pod labelled with the order, its fetcher running, first by name."""
    container = {"name": "model-fetcher", "image": "busybox", "command": ["sleep", "3600"]}
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "a-stray", "namespace": ns, "labels": {names.LABEL_ORDER: order}},
        "spec": {
            "initContainers": [container],
            "containers": [{**container, "name": "main"}],
            "automountServiceAccountToken": False,
        },
    }
    p.kubectl("apply", "-f", "-", input=json.dumps(pod))


def test_the_download_progress_moves_in_the_message_and_does_not_linger(
    platform: Platform, tmp_path: Path
) -> None:
    ns, name = HOLD_INIT_NAMESPACE, "minilm"
    platform.kubectl("create", "namespace", ns)
    try:
        platform.create_order(ns, name, hf(MINILM))
        pod = wait_for(
            lambda: fetching_pod(platform, ns), lambda p: p is not None, timeout=120, message="fetcher"
        )
        assert pod is not None
        stray_pod(platform, ns, name)
        wait_for(lambda: fetching_pods(platform, ns), lambda ps: len(ps) == 2, timeout=60, message="stray")
        # the fetcher "runs" but nothing answers its metric yet: no progress is claimed
        c = platform.wait_reason(ns, name, "WorkloadReady", "Progressing", timeout=60)
        assert platform.condition(c, "WorkloadReady")["message"] == WAITING

        deployment = platform.get("deployment", name, ns)
        assert deployment is not None
        fetcher = next(
            c
            for c in deployment["spec"]["template"]["spec"]["initContainers"]
            if c["name"] == names.FETCHER_CONTAINER
        )
        messages: list[str] = []
        with start_mirror(throttle=THROTTLE) as slow:
            proc, _ = start_fetcher(
                fetcher,
                local_dir=tmp_path / "model",
                home=tmp_path,
                hf_endpoint=slow.url,
                port=platform.fetcher_metrics_port,
            )
            try:
                while proc.poll() is None:
                    w = workload_ready(platform, ns, name)
                    assert (w["status"], w["reason"]) == ("False", "Progressing"), w
                    if "downloading" in w["message"] and w["message"] not in messages:
                        messages.append(w["message"])
                    time.sleep(1)
                proc.communicate(timeout=30)
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.communicate()
        assert proc.returncode == 0, (tmp_path / "model-fetcher.log").read_text()[-2000:]
        total = sum(files_under(tmp_path / "model").values())

        seen = []
        for m in messages:
            got = _PROGRESS.search(m)
            assert got is not None and m.startswith(f"Pod {pod} is downloading the model: "), m
            seen.append(float(got[1]) * _UNITS[got[2]])
            assert abs(float(got[3]) * _UNITS[got[4]] - total) <= 0.05 * _UNITS[got[4]], (m, total)
        print("progress messages:", *messages, sep="\n  ")
        assert len(seen) >= 3 and seen == sorted(seen) and len(set(seen)) >= 3, messages
        assert any(m.endswith(" left.") for m in messages), messages

        # the fetcher is gone (its pod still "initializing"): the message no longer claims progress
        wait_for(
            lambda: workload_ready(platform, ns, name),
            lambda w: w.get("message") == WAITING,
            timeout=30,
            message="the progress message to go",
        )
        # released, the pod runs and the order gets Ready; no download is mentioned any more
        platform.kubectl("annotate", "pod", "-n", ns, pod, f"{INIT_RELEASE_ANNOTATION}=true")
        ready = platform.wait_phase(ns, name, "Ready", timeout=120)
        assert "download" not in platform.condition(ready, "WorkloadReady")["message"]
    finally:
        platform.delete_namespace_and_wait(ns)
