"""Which pods of the local plane a real vLLM serves, and the pod status the plane runner reports. Pure.

**Adoption** (``runs_here``, ``download_of``, ``selected_bytes``): a pod is run by the plane runner
(``devtools.podrunner.plane``) when its runtime container is the pinned vLLM image, it has the model
fetcher init container, and the files its fetcher selects from the Hub weigh at most ``MAX_MODEL_BYTES``
(64 MiB: the tiny models of ``devtools.tiny_models``; a real model stays on the runtime stand-in). The
decision reads only what the pod renders (the fetcher's ``hf download`` arguments, its ``HF_ENDPOINT``)
and what the Hub says, as a kubelet would: nothing of the controller.

**Status** (``status_patch``): what a kubelet would report for the pod's processes: the init
containers' and containers' states (waiting / running / terminated with the exit code), their restart
counts, and the ``Initialized``, ``ContainersReady`` and ``Ready`` conditions. The phase stays
``Running`` from the moment KWOK's ``pod-ready`` stage made it so, init included (a kubelet says
``Pending`` while the init containers run): KWOK's stage fires again on a ``Pending`` pod that is not
Ready, and would mark it Ready over what the processes say.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from shared import names

MAX_MODEL_BYTES = 64 * 1024 * 1024
RUNTIME_CONTAINER = "runtime"
_FLAGS = frozenset({"--force-download", "--quiet", "--dry-run", "--help", "-h"})  # no value

Obj = dict[str, Any]


@dataclass(frozen=True)
class Download:
    """What a rendered ``hf download`` fetches: the repository, its revision, the file patterns
    (empty: the whole repository)."""

    repo: str
    revision: str
    patterns: tuple[str, ...]


def runs_here(pod_spec: Mapping[str, Any], image: str) -> bool:
    """A single-node vLLM pod of the pinned image with the model fetcher (module doc)."""
    containers = pod_spec.get("containers") or []
    inits = pod_spec.get("initContainers") or []
    runtime = [c for c in containers if c.get("name") == RUNTIME_CONTAINER]
    return (
        len(runtime) == 1
        and runtime[0].get("image") == image
        and any(c.get("name") == names.FETCHER_CONTAINER for c in inits)
    )


def download_of(argv: Sequence[str]) -> Download | None:
    """The repository, revision and patterns of ``hf download REPO [PATTERN ...] [--OPTION VALUE ...]``
    in ``argv`` (the ``--include`` values are patterns too); None when ``argv`` downloads nothing."""
    if "download" not in argv:
        return None
    rest = list(argv[list(argv).index("download") + 1 :])
    positional: list[str] = []
    options: dict[str, list[str]] = {}
    i = 0
    while i < len(rest):
        arg = rest[i]
        if arg in _FLAGS:
            i += 1
        elif arg.startswith("--"):
            key, eq, value = arg.partition("=")
            if not eq:
                value = rest[i + 1] if i + 1 < len(rest) else ""
                i += 1
            options.setdefault(key, []).append(value)
            i += 1
        else:
            positional.append(arg)
            i += 1
    if not positional:
        return None
    revision = (options.get("--revision") or ["main"])[-1]
    return Download(
        positional[0], revision, tuple(dict.fromkeys([*positional[1:], *options.get("--include", [])]))
    )


def selected_bytes(siblings: Iterable[Mapping[str, Any]], patterns: Sequence[str]) -> int | None:
    """The bytes of the Hub files (``siblings`` of ``/api/models/{repo}/revision/{rev}?blobs=true``)
    that ``patterns`` select, as ``hf download`` matches them (fnmatch); None when a selected file's
    size is not given."""
    total = 0
    for s in siblings:
        name = str(s.get("rfilename", ""))
        if patterns and not any(fnmatch.fnmatchcase(name, p) for p in patterns):
            continue
        size = s.get("size")
        if not isinstance(size, int):
            return None
        total += size
    return total


# --- status -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class State:
    """One container's state as a kubelet reports it."""

    kind: Literal["waiting", "running", "terminated"]
    reason: str = ""
    message: str = ""
    exit_code: int | None = None
    at: str = ""  # startedAt (running) or finishedAt (terminated), RFC 3339

    def as_status(self) -> Obj:
        if self.kind == "running":
            return {"running": {"startedAt": self.at}}
        if self.kind == "terminated":
            term: Obj = {
                "exitCode": self.exit_code or 0,
                "reason": self.reason or "Error",
                "finishedAt": self.at,
            }
            if self.message:
                term["message"] = self.message
            return {"terminated": term}
        waiting: Obj = {"reason": self.reason or "ContainerCreating"}
        if self.message:
            waiting["message"] = self.message
        return {"waiting": waiting}


WAITING = State("waiting", "PodInitializing")


@dataclass(frozen=True)
class Report:
    """What the runner knows of a pod: each container's state, readiness and restarts, and the last
    termination of each (``lastState``)."""

    init: Mapping[str, State]
    containers: Mapping[str, State]
    ready: frozenset[str] = frozenset()
    restarts: Mapping[str, int] | None = None
    last: Mapping[str, State] | None = None
    message: str = ""


def _statuses(
    specs: Iterable[Mapping[str, Any]], states: Mapping[str, State], report: Report, *, init: bool
) -> list[Obj]:
    out = []
    for c in specs:
        name = c["name"]
        state = states.get(name, WAITING)
        entry: Obj = {
            "name": name,
            "image": c.get("image", ""),
            "imageID": "",
            "ready": name in report.ready or (init and state.kind == "terminated" and state.exit_code == 0),
            "restartCount": (report.restarts or {}).get(name, 0),
            "started": state.kind == "running",
            "state": state.as_status(),
        }
        last = (report.last or {}).get(name)
        if last is not None:
            entry["lastState"] = last.as_status()
        out.append(entry)
    return out


def status_patch(pod: Mapping[str, Any], report: Report, now: str) -> Obj:
    """The pod's ``status`` (a JSON merge patch: lists whole) for ``report`` (module doc). Conditions
    the runner does not own (``PodScheduled``...) are kept as they are."""
    spec = pod.get("spec") or {}
    inits, containers = spec.get("initContainers") or [], spec.get("containers") or []
    initialized = all(
        report.init.get(c["name"], WAITING).kind == "terminated" and report.init[c["name"]].exit_code == 0
        for c in inits
    )
    all_ready = initialized and all(c["name"] in report.ready for c in containers)
    owned = {"Initialized": initialized, "ContainersReady": all_ready, "Ready": all_ready}
    old = {c["type"]: c for c in ((pod.get("status") or {}).get("conditions") or [])}
    conditions = [c for t, c in old.items() if t not in owned]
    for kind, ok in owned.items():
        status = "True" if ok else "False"
        before = old.get(kind, {})
        cond: Obj = {"type": kind, "status": status,
                     "lastTransitionTime": before.get("lastTransitionTime", now) if before.get("status") == status else now}  # fmt: skip
        if not ok:
            cond["reason"] = "ContainersNotInitialized" if not initialized else "ContainersNotReady"
            if report.message:
                cond["message"] = report.message
        conditions.append(cond)
    return {
        "status": {
            "phase": "Running",
            "conditions": conditions,
            "initContainerStatuses": _statuses(inits, report.init, report, init=True),
            "containerStatuses": _statuses(containers, report.containers, report, init=False),
        }
    }
