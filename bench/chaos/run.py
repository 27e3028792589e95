"""One churn on a running stack, with or without faults, and what it left (``Outcome``)."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

from bench.chaos import verdict
from bench.chaos.churn import Executor, expected, plan
from bench.chaos.faults import Injector, Schedule
from bench.chaos.stack import LABEL, Stack
from bench.chaos.watch import Watch
from controller.kube.client import load_api_client
from devtools.cluster import launcher


@dataclass(frozen=True)
class Shape:
    """The size of a churn."""

    seconds: float
    namespaces: int = 3
    creates: int = 30
    max_live: int = 12


@dataclass
class Outcome:
    label: str
    statuses: dict[str, verdict.Status]
    figures: dict[str, Any] = field(default_factory=dict)
    lost: dict[str, list[str]] = field(default_factory=dict)


def namespaces(stack: Stack, label: str, seed: int, count: int) -> list[str]:
    """Fresh namespaces for a run (an earlier run's are deleted first), labelled for the webhook."""
    names = [f"chaos-{label}-{seed}-{i}" for i in range(count)]
    stack.kubectl("delete", "namespace", *names, "--ignore-not-found", "--wait=true", "--timeout=180s")
    for ns in names:
        stack.kubectl("create", "namespace", ns)
        stack.kubectl("label", "namespace", ns, f"{LABEL}=true")
    return names


def cleanup(stack: Stack, names: list[str], *, wait: bool = True) -> None:
    """Delete a run's namespaces. With ``wait``, until they are gone and their model volumes are
    available again, so that the next run finds the fleet as this one did."""
    stack.kubectl(
        "delete", "namespace", *names, "--ignore-not-found", f"--wait={str(wait).lower()}", "--timeout=180s"
    )
    if wait:
        launcher.apply_fleet(stack.cluster.bin_dir)  # released model volumes become available again


def run(
    stack: Stack, *, label: str, seed: int, shape: Shape, schedule: Schedule | None, quiet: float = 12
) -> Outcome:
    names = namespaces(stack, label, seed, shape.namespaces)
    ops = plan(
        seed, shape.seconds, namespaces=shape.namespaces, creates=shape.creates, max_live=shape.max_live
    )
    api = stack.api
    stop, stop_watch = threading.Event(), threading.Event()
    executor = Executor(load_api_client(kubeconfig=str(stack.cluster.kubeconfig)), names, ops)
    injector = Injector(stack, schedule, seed) if schedule is not None else None
    watch = Watch(
        load_api_client(kubeconfig=str(stack.cluster.kubeconfig)),
        names,
        hub_active=(lambda: injector.active("hub") is not None) if injector else (lambda: False),
    )
    kills0, exits0 = stack.replicas.kills, len(stack.replicas.exits)
    start = time.time() + 1.0
    threads = [threading.Thread(target=watch.run, args=(stop_watch,), name="watch", daemon=True)]
    if injector is not None:
        threads.append(threading.Thread(target=injector.run, args=(start, stop), name="faults", daemon=True))
    for t in threads:
        t.start()
    executor.run(start, stop)
    for t in threads[1:]:  # every fault of the schedule happens, also those after the last operation
        t.join(timeout=900)
    stop.set()
    remaining = start + shape.seconds - time.time()
    if remaining > 0 and injector is not None:
        time.sleep(remaining)
    churned = time.time() - start
    settled = verdict.settle(api, names, quiet=quiet)
    stop_watch.set()
    threads[0].join(timeout=30)
    windows = [w for w in (injector.windows if injector else []) if w.what == "webhook" and w.end]
    spans = [(w.start, w.end or w.start) for w in windows]
    statuses = verdict.statuses(api, names)
    want = expected(ops)
    attempts = executor.attempts
    out = Outcome(label, statuses)
    out.lost = {
        "status_not_settled": [] if settled >= 0 else ["the orders did not settle in 240 s"],
        "operations_given_up": [f"{op.verb} {op.key}" for op in ops if op not in executor.done],
        "orders_missing": sorted(set(want) - set(statuses)),
        "orders_extra": sorted(set(statuses) - set(want)),
        "edits_lost": sorted(k for k in want if k in statuses and statuses[k]["model"] != want[k]),
        "orphans": verdict.orphans(api, names),
        "stale_model_volumes": verdict.stale_volumes(api, names),
        "duplicate_workloads": verdict.workloads(api, names)
        + [f"{ns}/{o}: {sorted(d)} at once" for (ns, o), d in watch.duplicates.items()],
        "token_rotations": [f"{k}: {n} values" for k, n in watch.rotations().items()],
        "stored_while_webhook_down": verdict.stored_while_down(api, names, spans)
        + [
            f"{a.verb} {a.key} accepted at {a.at:.1f}"
            for a in attempts
            if a.verb == "create" and a.outcome == "ok" and any(s + 1 < a.at < e - 1 for s, e in spans)
        ],
        "ready_lost_in_hub_outage": watch.hub_lost,
    }
    out.figures = {
        "operations": {
            v: sum(1 for op in executor.done if op.verb == v) for v in ("create", "edit", "delete")
        },
        "attempts": {
            o: sum(1 for a in attempts if a.outcome == o) for o in sorted({a.outcome for a in attempts})
        },
        "refused_while_webhook_down": sum(
            1
            for a in attempts
            if a.outcome == "refused_by_webhook" and any(s <= a.at <= e + 2 for s, e in spans)
        ),
        "edits_waited_for_steady_seconds": round(executor.waited, 1),
        "surviving_orders": len(statuses),
        "ready_orders": sum(1 for s in statuses.values() if s["phase"] == "Ready"),
        "churn_seconds": round(churned, 1),
        "settle_seconds": round(settled, 1),
        "verdict_seconds": round(time.time() - start - churned - max(settled, 0), 1),
        "watch_samples": watch.samples,
        "watch_samples_skipped": watch.skipped,
        "hub_outage_samples": watch.hub_samples,
        "ready_orders_watched_through_hub_outage": len(watch.hub_ready),
        "tokens_watched": len(watch.tokens),
    }
    if injector is not None:
        out.figures["faults"] = {
            "leader_kills": stack.replicas.kills - kills0,
            "apiserver_restarts": injector.count("apiserver"),
            "etcd_restarts": injector.count("etcd"),
            "webhook_restarts": injector.count("webhook"),
            "webhook_down_seconds": round(sum(e - s for s, e in spans), 1),
            "hub_outage_seconds": round(
                sum((w.end or w.start) - w.start for w in injector.windows if w.what == "hub"), 1
            ),
            "replica_exits_on_their_own": [
                f"{e.name} rc={e.returncode}" for e in stack.replicas.exits[exits0:]
            ],
            "injection_errors": injector.errors,
        }
    return out
