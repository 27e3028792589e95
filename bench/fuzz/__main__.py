"""``python -m bench.fuzz [--count 10000] [--seed 1]``: generated orders, classes and recipes,
valid and broken, created and updated through the real API server with the webhook registered and
the controller running. Prints the figures as one JSON line; exit status 0 when no 5xx came from
the webhook, no stored object is refused by the contract, and the controller did not crash."""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from bench.chaos.stack import ROOT, Stack, running
from bench.fuzz.gen import Generator
from bench.fuzz.run import Fuzz

LABEL = "inference-fuzz"


def fuzz(stack: Stack, *, count: int, seed: int, batch: int, workers: int) -> dict[str, Any]:
    """One fuzz run on a running stack (webhook registered for ``LABEL``); the figures."""
    namespaces = [f"fuzz-{seed}-{i}" for i in range(3)]
    for ns in namespaces:
        stack.kubectl("delete", "namespace", ns, "--ignore-not-found", "--wait=true", "--timeout=180s")
        stack.kubectl("create", "namespace", ns)
        stack.kubectl("label", "namespace", ns, f"{LABEL}=true")
    before = stack.webhook.decisions()
    f = Fuzz(stack.api, Generator(seed, namespaces, LABEL))
    timing = f.run(count, namespaces=namespaces, label=LABEL, batch=batch, workers=workers)
    after = stack.webhook.decisions()
    for ns in namespaces:
        stack.kubectl("delete", "namespace", ns, "--ignore-not-found", "--wait=false")
    decisions = {k: int(after.get(k, 0) - before.get(k, 0)) for k in after}
    t = f.tally
    controllers = list(stack.replicas.procs)
    tracebacks = sum(path.read_text(errors="replace").count("Traceback") for path in stack.replicas.logs())
    webhook_log = stack.webhook.process.log_path.read_text(errors="replace")
    five_xx = t.outcomes["webhook_unreachable_or_5xx"] + t.updates["webhook_unreachable_or_5xx"]
    figures: dict[str, Any] = {
        "count": count,
        "seed": seed,
        "creates": sum(t.outcomes.values()),
        "updates": sum(t.updates.values()),
        "accepted": t.outcomes["accepted"] + t.updates["accepted"],
        "refused_by_schema": t.outcomes["refused_by_schema"] + t.updates["refused_by_schema"],
        "refused_by_webhook": t.outcomes["refused_by_webhook"] + t.updates["refused_by_webhook"],
        "webhook_internal_errors": t.outcomes["webhook_internal_error"] + t.updates["webhook_internal_error"],
        "webhook_5xx": five_xx,
        "api_unavailable": t.outcomes["api_unavailable"] + t.updates["api_unavailable"],
        "other": t.outcomes["other"] + t.updates["other"],
        "by_kind": {f"{k}/{o}": n for (k, o), n in sorted(t.by_kind.items())},
        "webhook_decisions": decisions,
        "webhook_log_tracebacks": webhook_log.count("Traceback"),
        "stored_but_refused_by_contract": len(t.stored_but_refused),
        "meant_valid_but_refused": len(t.valid_refused),
        "controller_running": all(p.proc is not None and p.proc.poll() is None for p in controllers),
        "controller_exits": [f"{e.name} rc={e.returncode}" for e in stack.replicas.exits],
        "controller_log_tracebacks": tracebacks,
        **timing,
    }
    figures["crashes"] = (
        len(figures["controller_exits"]) + tracebacks + (0 if figures["controller_running"] else 1)
    )
    figures["ok"] = (
        five_xx == 0
        and figures["webhook_internal_errors"] == 0
        and decisions.get("internal_error", 0) == 0
        and figures["webhook_log_tracebacks"] == 0
        and not t.stored_but_refused
        and figures["crashes"] == 0
    )
    figures["detail"] = {
        "stored_but_refused_by_contract": t.stored_but_refused[:20],
        "meant_valid_but_refused": t.valid_refused[:10],
        "examples": t.examples,
    }
    return figures


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.fuzz", description=__doc__)
    p.add_argument("--count", type=int, default=10_000)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--batch", type=int, default=500, help="objects stored at most before a sweep")
    p.add_argument("--workers", type=int, default=4, help="requests in flight")
    args = p.parse_args(argv)
    log_dir = ROOT / ".cluster" / "fuzz-logs" / time.strftime("%Y%m%d-%H%M%S")
    with running(log_dir, replicas=1, label=LABEL) as stack:
        figures = fuzz(stack, count=args.count, seed=args.seed, batch=args.batch, workers=args.workers)
    figures["logs"] = str(log_dir)
    detail = figures.pop("detail")
    print(json.dumps(detail, indent=1), file=sys.stderr)
    print(json.dumps(figures))
    return 0 if figures["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
