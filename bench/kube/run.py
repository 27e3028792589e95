"""Kubernetes runtime benchmark: the work queue's throughput, and against the real local API server
(``python -m devtools.cluster up`` first) the informer's event latency, the cost of a no-op server-side
apply, and the takeover time of the Lease after a crash and after a graceful stop.

    .venv/bin/python -m bench.kube.run [--objects 200] [--no-cluster]

Prints one line per figure.
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time
import uuid
from typing import Any

from controller.kube import apply as kapi
from controller.kube.client import load_api_client, resource_for
from controller.kube.informer import Informer
from controller.kube.leader import LeaderElector
from controller.kube.queue import WorkQueue


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p * len(ordered)))]


def bench_queue(n: int = 200_000, keys: int = 1000) -> None:
    q: WorkQueue[tuple[str, str]] = WorkQueue()
    t0 = time.perf_counter()
    for i in range(n):
        q.add(("ns", f"k{i % keys}"))
    added = time.perf_counter() - t0
    t0 = time.perf_counter()
    handed = 0
    while (key := q.get(timeout=0)) is not None:
        q.done(key)
        handed += 1
    drained = time.perf_counter() - t0
    print(f"queue: {n} adds over {keys} keys in {added * 1e3:.0f} ms ({n / added:,.0f}/s); "
          f"deduplicated to {handed} keys, handed out and done in {drained * 1e3:.1f} ms")  # fmt: skip


def bench_informer(api: Any, namespace: str, objects: int) -> None:
    created: dict[str, float] = {}
    seen: dict[str, float] = {}
    done = threading.Event()

    def handler(event: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
        name = obj["metadata"]["name"]
        if event == "ADDED" and name in created:
            seen[name] = time.perf_counter()
            if len(seen) == objects:
                done.set()

    inf = Informer(api, resource_for("v1", "ConfigMap"), namespace=namespace, handler=handler)
    inf.start()
    inf.wait_synced(30)
    for i in range(objects):
        name = f"cm-{i}"
        created[name] = time.perf_counter()
        kapi.create(
            api, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace}}
        )
    done.wait(60)
    lat = [(seen[n] - created[n]) * 1e3 for n in seen]
    print(f"informer: {len(seen)}/{objects} ADDED events; create -> handler latency median "
          f"{statistics.median(lat):.1f} ms, p95 {pct(lat, 0.95):.1f} ms, max {max(lat):.1f} ms")  # fmt: skip
    t0 = time.perf_counter()
    relist = Informer(api, resource_for("v1", "ConfigMap"), namespace=namespace)
    relist.start()
    relist.wait_synced(60)
    print(
        f"informer: initial list of {len(relist.list())} ConfigMaps synced in {(time.perf_counter() - t0) * 1e3:.0f} ms"
    )
    relist.stop()
    inf.stop()


def bench_apply(api: Any, namespace: str, n: int = 50) -> None:
    obj = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "applied", "namespace": namespace},
        "data": {"k": "v" * 100},
    }
    first = kapi.apply(api, obj, field_manager="bench")
    times = []
    rv = first["metadata"]["resourceVersion"]
    same = 0
    for _ in range(n):
        t0 = time.perf_counter()
        out = kapi.apply(api, obj, field_manager="bench")
        times.append((time.perf_counter() - t0) * 1e3)
        same += out["metadata"]["resourceVersion"] == rv
    print(f"apply: {n} no-op server-side applies, median {statistics.median(times):.1f} ms, "
          f"p95 {pct(times, 0.95):.1f} ms; resourceVersion unchanged in {same}/{n}")  # fmt: skip


def bench_leader(api: Any, namespace: str) -> None:
    for release, duration in ((False, 4.0), (True, 60.0)):
        name = f"bench-{uuid.uuid4().hex[:6]}"
        started = {ident: threading.Event() for ident in ("a", "b")}
        electors = {
            ident: LeaderElector(
                api,
                namespace=namespace,
                name=name,
                identity=ident,
                lease_duration=duration,
                renew_deadline=3.0,
                retry_period=0.5,
                on_started_leading=started[ident].set,
                on_stopped_leading=lambda: None,
            )
            for ident in ("a", "b")
        }
        electors["a"].start()
        started["a"].wait(30)
        electors["b"].start()
        time.sleep(1.0)  # b has seen the Lease held
        t0 = time.perf_counter()
        electors["a"].stop(release=release)
        started["b"].wait(duration + 30)
        how = "graceful stop (released)" if release else "crash (not released)"
        print(
            f"leader: takeover after a {how}: {time.perf_counter() - t0:.1f} s "
            f"(lease duration {duration:.0f} s, retry period 0.5 s)"
        )
        electors["b"].stop()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--objects", type=int, default=200)
    p.add_argument("--no-cluster", action="store_true")
    p.add_argument("--kubeconfig", default=".cluster/kubeconfig")
    args = p.parse_args()
    bench_queue()
    if args.no_cluster:
        return
    api = load_api_client(kubeconfig=args.kubeconfig)
    namespace = f"bench-kube-{uuid.uuid4().hex[:5]}"
    kapi.create(api, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    try:
        bench_informer(api, namespace, args.objects)
        bench_apply(api, namespace)
        bench_leader(api, namespace)
    finally:
        kapi.delete(api, "v1", "Namespace", namespace=None, name=namespace)


if __name__ == "__main__":
    main()
