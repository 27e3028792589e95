"""``python -m bench.autoscale [--clients N] [--load-seconds S] [--quiet-seconds S] [--plot PATH]``

One order of a tiny chat model on real vLLM (the plane runner; ``--max-num-seqs 2`` so load queues),
in a class with ``metric: QueueDepth``, ``target: 1`` (see tests/integration/e2e/test_autoscaling.py), replicas 1 to 2 and a 30 s scale-down window,
on the local plane with Prometheus and KEDA (started when down). After the order is Ready: ``clients``
closed-loop senders through the entry address for ``load-seconds`` (the load step), then nothing for
``quiet-seconds``. Every 2 s it samples the Deployment's wanted and ready replicas, KEDA's HPA's
desired replicas and the order's queue from Prometheus. Prints the figures (bench/autoscale/figures.py)
as one JSON line and writes the replicas over time as a PNG.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
import threading
import time
from typing import Any

import yaml

from bench.autoscale.figures import Sample, figures
from bench.chaos.stack import installed_plane
from devtools import tiny_models
from testkit.load import running_load
from testkit.platform import Platform, hf, running_platform

ROOT = pathlib.Path(__file__).resolve().parents[2]
NS = "bench-autoscale"
ORDER = "tiny"
MIN, MAX, TARGET, WINDOW = 1, 2, 1, 30


def recipe(p: Platform) -> str:
    doc = yaml.safe_load((ROOT / "deploy/base/platform/vllm.yaml").read_text())
    doc["metadata"] = {"name": "vllm-narrow"}
    doc["spec"]["extraArgs"] = ["--max-num-seqs", "2"]
    p.apply(doc)
    p.cluster_objects.append(("inferencerecipe", "vllm-narrow"))
    return "vllm-narrow"


def look(p: Platform) -> Sample:
    d = p.get("deployment", ORDER, NS) or {}
    hpa = p.get("hpa", f"keda-hpa-{ORDER}", NS)
    queue: float | None = None
    if p.autoscaling is not None:
        try:
            got = p.autoscaling.query(f'sum(vllm:num_requests_waiting{{namespace="{NS}",order="{ORDER}"}})')
            queue = float(got[0]["value"][1]) if got else 0.0
        except OSError:
            queue = None
    desired = (hpa or {}).get("status", {}).get("desiredReplicas")
    return Sample(
        time.monotonic(),
        int(d.get("spec", {}).get("replicas") or 0),
        min(int(d.get("status", {}).get("readyReplicas") or 0), p.served_by(NS, ORDER)),
        None if desired is None else int(desired),
        queue,
    )


def plot(samples: list[Sample], *, load_at: float, quiet_at: float, out: pathlib.Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t = [s.t - load_at for s in samples]
    fig, ax = plt.subplots(figsize=(8, 4.5), dpi=110)
    ax.step(t, [s.wanted for s in samples], where="post", label="wanted replicas (Deployment)", lw=1.6)
    ax.step(t, [s.ready for s in samples], where="post", label="ready replicas", lw=1.6)
    ax.step(t, [s.desired or 0 for s in samples], where="post", label="HPA desired", lw=1, ls="--")
    ax2 = ax.twinx()
    ax2.plot(t, [s.queue or 0 for s in samples], color="grey", lw=0.8, label="queue (waiting requests)")
    ax2.set_ylabel("waiting requests")
    ax.axvspan(0, quiet_at - load_at, color="orange", alpha=0.1, label="load")
    ax.set_xlabel("seconds since the load step")
    ax.set_ylabel("replicas")
    ax.set_ylim(0, MAX + 1)
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left", fontsize=8)
    ax2.legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    a = argparse.ArgumentParser(prog="python -m bench.autoscale", description=__doc__)
    a.add_argument("--clients", type=int, default=10)
    a.add_argument("--load-seconds", type=float, default=300)
    a.add_argument("--quiet-seconds", type=float, default=300)
    a.add_argument("--plot", type=pathlib.Path, default=ROOT / "docs" / "img" / "autoscale.png")
    args = a.parse_args(argv)
    cluster, kubectl, api = installed_plane()
    model = tiny_models.CHAT.repo_id
    with running_platform(cluster, kubectl, api, real_runtime=True, autoscaling=True) as p:
        kubectl("create", "namespace", NS, check=False)
        try:
            klass = p.create_class(
                {
                    "scaling": {
                        "minReplicas": MIN,
                        "maxReplicas": MAX,
                        "metric": "QueueDepth",
                        "target": TARGET,
                        "scaleDownStabilizationSeconds": WINDOW,
                    },
                    "recipes": [recipe(p)],
                },
                prefix="bench",
            )
            applied = time.monotonic()
            p.create_order(NS, ORDER, hf(model), klass=klass)
            p.wait_phase(NS, ORDER, "Ready", timeout=900)
            ready_s = time.monotonic() - applied
            print(f"[autoscale] order Ready {ready_s:.0f} s after the apply", file=sys.stderr, flush=True)
            target = p.target(NS, ORDER)
            samples: list[Sample] = []
            stop = threading.Event()

            def sampler() -> None:
                while not stop.is_set():
                    samples.append(look(p))
                    stop.wait(2)

            th = threading.Thread(target=sampler, daemon=True)
            th.start()
            time.sleep(10)
            body: dict[str, Any] = {
                "model": model,
                "messages": [{"role": "user", "content": "count to twenty"}],
                "max_tokens": 16,
            }
            load_at = time.monotonic()
            with running_load(target, body, clients=args.clients) as load:
                time.sleep(args.load_seconds)
            quiet_at = time.monotonic()
            print(f"[autoscale] load done: {dict(load.counts)}", file=sys.stderr, flush=True)
            time.sleep(args.quiet_seconds)
            stop.set()
            th.join(timeout=10)
        finally:
            p.delete_namespace_and_wait(NS)
    result = figures(samples, load_at=load_at, quiet_at=quiet_at, min_replicas=MIN)
    lat = sorted(load.latencies)
    result.update(
        {
            "clients": args.clients,
            "load_seconds": args.load_seconds,
            "quiet_seconds": args.quiet_seconds,
            "order_ready_s": round(ready_s, 1),
            "answers": dict(load.counts),
            "latency_p50_s": round(lat[len(lat) // 2], 2) if lat else None,
            "latency_p95_s": round(lat[int(len(lat) * 0.95)], 2) if lat else None,
            "plot": str(args.plot),
        }
    )
    plot(samples, load_at=load_at, quiet_at=quiet_at, out=args.plot)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
