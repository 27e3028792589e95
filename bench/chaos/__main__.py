"""``python -m bench.chaos [--minutes N] [--seed S]``: the same seeded churn twice, without and with
faults, on the local real plane (started when down); prints the figures as one JSON line at the end.
Exit status 0 when nothing was lost."""

from __future__ import annotations

import argparse
import json
import sys
import time

from bench.chaos import verdict
from bench.chaos.faults import Schedule
from bench.chaos.run import Shape, cleanup, run
from bench.chaos.stack import ROOT, running


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.chaos", description=__doc__)
    p.add_argument("--minutes", type=float, default=5.0, help="length of each churn (default 5)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--creates", type=int, default=30, help="orders created over the churn")
    p.add_argument("--namespaces", type=int, default=3)
    p.add_argument("--max-live", type=int, default=12, help="most orders alive at once")
    args = p.parse_args(argv)
    shape = Shape(args.minutes * 60, args.namespaces, args.creates, args.max_live)
    log_dir = ROOT / ".cluster" / "chaos-logs" / time.strftime("%Y%m%d-%H%M%S")
    t0 = time.time()
    with running(log_dir) as stack:
        results = {}
        for label, schedule in (("clean", None), ("faulted", Schedule.full(shape.seconds))):
            print(f"[chaos] {label} run: {shape}", file=sys.stderr, flush=True)
            outcome = run(stack, label=label, seed=args.seed, shape=shape, schedule=schedule)
            results[label] = outcome
            print(f"[chaos] {label}: {json.dumps(outcome.figures)}", file=sys.stderr, flush=True)
            cleanup(stack, [f"chaos-{label}-{args.seed}-{i}" for i in range(shape.namespaces)])
        tracebacks = sum(
            path.read_text(errors="replace").count("Traceback") for path in stack.replicas.logs()
        )
    clean, faulted = results["clean"], results["faulted"]
    lost = dict(faulted.lost)
    lost["status_differences"] = verdict.differences(clean.statuses, faulted.statuses)
    lost["clean_run_lost"] = [f"{k}: {v}" for k, vs in clean.lost.items() for v in vs]
    summary = {
        "seed": args.seed,
        "minutes": args.minutes,
        "orders_churned": faulted.figures["operations"],
        "faults": faulted.figures.get("faults", {}),
        "clean": clean.figures,
        "faulted": {k: v for k, v in faulted.figures.items() if k != "faults"},
        "controller_log_tracebacks": tracebacks,
        "lost": {k: len(v) for k, v in lost.items()},
        "lost_detail": {k: v for k, v in lost.items() if v},
        "wall_seconds": round(time.time() - t0),
        "logs": str(log_dir),
    }
    summary["ok"] = not any(lost.values())
    print(json.dumps(summary, sort_keys=False))
    return 0 if summary["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
