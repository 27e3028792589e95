"""A hostile Hub does not starve the controller (issue 21, "Done when"): the platform's mirror also
serves the hostile repositories of standins/hub_mirror/hostile.py. Orders for a 300 MB config.json,
a 4,000-shard index and a negative layer count are refused with ``ModelResolved=False/ModelNotReady``
naming the file or field, while an ordinary order placed at the same time goes Ready; the controller
keeps its process (no restart) and its peak RSS (VmHWM) stays below 400 MB; and over a couple of
minutes the mirror is asked about each hostile repository at most a few dozen times (refusals are
remembered for the revision, not retried in a loop)."""

from __future__ import annotations

import pathlib
import re
import time

import pytest

from testkit.platform import Platform, hf

pytestmark = pytest.mark.cluster

PLATFORM_HOSTILE_HUB = True  # read by the platform fixture (tests/integration/platform.py)

NORMAL = "Qwen/Qwen2.5-0.5B-Instruct"
HOSTILE = {
    # order name: (repository, what the refusal must name)
    "huge-config": ("hostile/huge-config", "config.json"),
    "many-shards": ("hostile/many-shards", "model.safetensors.index.json"),
    "negative-layers": ("hostile/negative-layers", "num_hidden_layers"),
}
PEAK_RSS_MB = 400
MAX_ASKED = 36  # "at most a few dozen times"
WINDOW = 150.0  # seconds from the orders' creation to the count of requests


def peak_rss_mb(pid: int) -> float:
    """The process's peak resident set (VmHWM) in MB."""
    for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024 / 1e6
    raise AssertionError(f"no VmHWM in /proc/{pid}/status")


def asked(platform: Platform, repo: str) -> int:
    """Requests the mirror served about ``repo`` (its own path segment, not a longer name)."""
    pattern = re.compile(rf"/{re.escape(repo)}(?:[/?]|$)")
    return sum(1 for r in platform.mirror.requests() if pattern.search(r.path))


def test_hostile_repositories_are_refused_by_name_without_starving_the_controller(
    platform: Platform, ns: str
) -> None:
    proc = platform.controller.proc
    assert proc is not None and proc.poll() is None
    pid, starts = proc.pid, platform.controller.starts
    t0 = time.monotonic()
    for name, (repo, _) in HOSTILE.items():
        platform.create_order(ns, name, hf(repo))
    platform.create_order(ns, "normal", hf(NORMAL))

    platform.wait_phase(ns, "normal", "Ready", timeout=120)
    ready_after = time.monotonic() - t0

    refusals: dict[str, str] = {}
    for name, (repo, named) in HOSTILE.items():
        obj = platform.wait_reason(ns, name, "ModelResolved", "ModelNotReady", timeout=120)
        cond = platform.condition(obj, "ModelResolved")
        assert cond["status"] == "False", cond
        assert named in cond["message"] and repo in cond["message"], cond["message"]
        refusals[repo] = cond["message"]

    # The refused orders stay refused, and the mirror is not asked again and again.
    time.sleep(max(0.0, WINDOW - (time.monotonic() - t0)))
    window = time.monotonic() - t0
    counts = {repo: asked(platform, repo) for repo, _ in HOSTILE.values()}
    for name in HOSTILE:
        cond = platform.condition(platform.order(ns, name), "ModelResolved")
        assert (cond["status"], cond["reason"]) == ("False", "ModelNotReady"), cond
    assert platform.order(ns, "normal")["status"]["phase"] == "Ready"

    # The same controller process throughout, below its memory bound.
    assert proc.poll() is None, f"the controller exited with {proc.returncode}; see {platform.controller.log}"
    assert platform.controller.starts == starts and proc.pid == pid
    peak = peak_rss_mb(pid)

    print(f"\nnormal order Ready after {ready_after:.1f} s")
    print(f"controller pid {pid}, peak RSS (VmHWM) {peak:.0f} MB")
    for repo, n in counts.items():
        print(f"{repo}: asked {n} times in {window:.0f} s; refusal: {refusals[repo]}")
    assert peak < PEAK_RSS_MB, f"controller peak RSS {peak:.0f} MB"
    for repo, n in counts.items():
        assert 0 < n <= MAX_ASKED, f"{repo} asked {n} times in {window:.0f} s"
