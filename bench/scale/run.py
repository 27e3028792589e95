"""``python -m bench.scale --nodes N --orders M [--keep]``: the controller at fleet scale, on the real plane.

Brings up the local plane (``scale`` tuning) with N KWOK nodes and their ResourceSlices, deploys the
product as ``make up`` does with the controller as its ServiceAccount, applies M orders of mixed
models across 50 namespaces as fast as the API server takes them, and measures from the API server
and the controller's /metrics. The last line printed is one JSON object with the figures
(docs/benchmarks.md, "Scale"), with ``NoCapacity`` observed next to the planner's offline packing and
the optimal packing of an independent solver (``bench.scale.optimal``; ``python -m bench.scale.offline``
compares those two without a plane). ``--keep`` leaves everything running for ``kubectl``.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from bench.scale import orders as ord_
from bench.scale import profile
from bench.scale.figures import State, devices, metric_sum, overcommit, proc_stat, writes
from bench.scale.optimal_input import optimal_packing
from bench.scale.packing import bundled_class, bundled_recipes, hub_facts, pack
from bench.scale.plane import ROOT, Plane, say, stop_all
from bench.scale.plot import plot
from bench.scale.track import Tracker
from controller.kube import apply as kapi
from controller.kube.client import load_api_client
from shared import names

Obj = dict[str, Any]
RECONCILES = "inference_controller_reconcile_duration_seconds_count"


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m bench.scale", description=__doc__.splitlines()[0] if __doc__ else ""
    )
    p.add_argument(
        "--nodes", type=int, default=50, help="KWOK GPU nodes in all (the default fleet's 8 included)"
    )
    p.add_argument("--orders", type=int, default=100)
    p.add_argument("--namespaces", type=int, default=50)
    p.add_argument("--steady", type=float, default=300.0, help="seconds of steady state counted for writes")
    p.add_argument("--timeout", type=float, default=1800.0, help="seconds to wait for each phase")
    p.add_argument("--workers", type=int, default=4, help="the controller's reconcile workers")
    p.add_argument("--apply-threads", type=int, default=8, help="concurrent creates of orders")
    p.add_argument(
        "--probe-period", default="30", help="module setting probePeriodSeconds (production default)"
    )
    p.add_argument("--resync", default="300", help="module setting resyncSeconds (production default)")
    p.add_argument("--reuse-plane", action="store_true", help="keep the running plane and its objects")
    p.add_argument("--no-restart", action="store_true", help="skip the SIGKILL restart")
    p.add_argument("--plot", type=pathlib.Path, default=None, help="PNG path (default: in the state dir)")
    p.add_argument(
        "--profile",
        type=pathlib.Path,
        default=None,
        help="py-spy the controller from apply to Ready (raw stacks)",
    )
    p.add_argument("--keep", action="store_true", help="leave the plane and the processes running")
    return p.parse_args(argv)


def create_all(api: Any, objs: list[Obj], threads: int) -> None:
    def one(obj: Obj) -> None:
        for attempt in range(20):
            try:
                kapi.create(api, obj)
                return
            except kapi.AlreadyExists:
                return
            except (kapi.ApiUnavailable, kapi.Conflict, kapi.KubeError) as e:
                if attempt == 19:
                    raise
                say(f"create {obj['metadata'].get('name')}: {e}; retrying")
                time.sleep(0.5 * (attempt + 1))

    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(one, objs))


def all_decided(m: int) -> Any:
    return lambda c: sum(c.values()) >= m and c[State.WAITING] == 0


def all_ready(m: int) -> Any:
    return lambda c: sum(c.values()) >= m and c[State.WAITING] == 0 and c[State.PLANNED] == 0


def running_not_ready(api: Any, tracker: Tracker) -> int:
    """Orders whose pod runs but that are not Ready: a status that is not true."""
    running: set[tuple[str, str]] = set()
    for pod in kapi.list_objects(api, "v1", "Pod"):
        meta = pod["metadata"]
        order = (meta.get("labels") or {}).get(names.LABEL_ORDER)
        if order and pod.get("status", {}).get("phase") == "Running" and not meta.get("deletionTimestamp"):
            running.add((meta["namespace"], order))
    return sum(1 for k in running if tracker.states.get(k) is not State.READY)


def events_by_us(api: Any) -> int:
    return sum(
        1
        for e in kapi.list_objects(api, "events.k8s.io/v1", "Event")
        if e.get("reportingController") == names.FIELD_MANAGER
        and str(e["metadata"].get("namespace", "")).startswith("scale-")
    )


def restart(plane: Plane, tracker: Tracker, m: int, timeout: float) -> dict[str, Any]:
    """SIGKILL the controller with every order settled; a new process syncs and decides them all."""
    hub_before = plane.hub_requests()
    plane.kill_controller()
    t0 = time.monotonic()
    ready_after = plane.start_controller()
    while True:
        text = plane.metrics()
        if metric_sum(text, RECONCILES) >= m and metric_sum(text, "inference_controller_queue_depth") == 0:
            break
        if time.monotonic() - t0 > timeout:
            raise TimeoutError("the restarted controller did not drain its queue")
        time.sleep(0.2)
    decided_after = time.monotonic() - t0
    time.sleep(10)  # anything the decisions asked for would be written by now
    text = plane.metrics()
    counts = tracker.counts()
    return {
        "restart_seconds_to_synced": round(ready_after, 1),
        "restart_seconds_to_decided": round(decided_after, 1),
        # Every write of the new process (Events apart), the model-facts ConfigMap included.
        "restart_writes": writes(text).objects,
        "restart_events": writes(text).events,
        "restart_hub_calls": plane.hub_requests() - hub_before,
        "restart_ready_after": counts[State.READY],
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    plane = Plane(workers=args.workers)
    if not args.reuse_plane:
        plane.cluster_up(fresh=True)
    else:
        plane.cluster_up(fresh=False)
    plane.apply_fleet(args.nodes, volumes=max(200, args.orders))
    plane.deploy(settings={"probePeriodSeconds": args.probe_period, "resyncSeconds": args.resync})
    api = load_api_client(kubeconfig=str(plane.demo.kubeconfig))
    objs = ord_.orders(args.orders, args.namespaces)
    create_all(api, ord_.namespace_objects(min(args.namespaces, args.orders)), args.apply_threads)
    tracker = Tracker(api)
    tracker.start()
    pid = plane.controller_pid
    m0, p0 = plane.metrics(), proc_stat(pid)
    say(f"applying {len(objs)} orders ({args.apply_threads} threads)")
    sampler = profile.start(pid, args.profile) if args.profile else None
    t_first = tracker.now()
    create_all(api, objs, args.apply_threads)
    t_applied = tracker.now()
    say(f"applied in {t_applied - t_first:.1f}s; waiting until every order is decided")
    t_decided = tracker.wait(all_decided(len(objs)), timeout=args.timeout, what="decided")
    say(f"all decided {t_decided - t_applied:.1f}s after the last apply; waiting for Ready")
    t_ready = tracker.wait(all_ready(len(objs)), timeout=args.timeout, what="ready")
    m1, p1 = plane.metrics(), proc_stat(pid)
    if sampler is not None:
        sampler.stop()
    counts = tracker.counts()
    w = writes(m1) - writes(m0)
    fleet = devices(kapi.list_objects(api, "resource.k8s.io/v1", "ResourceSlice"))
    claims = kapi.list_objects(api, "resource.k8s.io/v1", "ResourceClaim")
    over = overcommit(claims, fleet)
    say("offline packing of the same orders with the same planner, and the optimal packing")
    facts = hub_facts(plane.hub_url, [o["spec"]["model"]["ref"]["name"] for o in objs], ord_.MIRROR_TOKEN)
    slices = kapi.list_objects(api, "resource.k8s.io/v1", "ResourceSlice")
    device_classes = kapi.list_objects(api, "resource.k8s.io/v1", "DeviceClass")
    packing = pack(objs, slices, device_classes, facts, bundled_class(), bundled_recipes())
    best = optimal_packing(
        objs, slices, device_classes, facts, bundled_class(), bundled_recipes()[0], outcomes=packing.outcomes
    )
    say(
        f"NoCapacity: observed {counts[State.NO_CAPACITY]}, the planner offline {packing.no_capacity}, "
        f"the optimal packing {best.no_capacity} (CP-SAT, proven: {best.optimum.optimal})"
    )
    nodes = len(kapi.list_objects(api, "resource.k8s.io/v1", "ResourceSlice"))
    result: dict[str, Any] = {
        "nodes": nodes,
        "devices": len(fleet),
        "orders": len(objs),
        "models": ord_.distinct_models(objs),
        "seconds_to_apply": round(t_applied - t_first, 1),
        "planned": counts[State.PLANNED] + counts[State.READY],
        "ready": counts[State.READY],
        "no_capacity": counts[State.NO_CAPACITY],
        "refused": counts[State.REFUSED],
        "offline_planned": packing.planned,
        "offline_no_capacity": packing.no_capacity,
        "offline_refused": packing.refused,
        **best.figures(),
        "seconds_to_all_planned": round(t_decided - t_applied, 1),
        "seconds_to_all_ready": round(t_ready - t_applied, 1),
        "running_not_ready": running_not_ready(api, tracker),
        "overcommitted": over.total,
        "overcommitted_gauge": int(metric_sum(m1, "inference_controller_overcommitted_devices")),
        # Writes: every write request but Events (ConfigMap writes of the model facts included);
        # Events: those the API server holds, and the Event POSTs the controller counted.
        "writes_per_order": round(w.objects / len(objs), 2),
        "configmap_writes": w.configmaps,
        "events_per_order": round(events_by_us(api) / len(objs), 2),
        "event_posts_per_order": round(w.events / len(objs), 2),
        "hub_calls": int(metric_sum(m1, "inference_controller_hub_calls_total")),
        "controller_cpu_ms_per_order": round((p1.cpu_seconds - p0.cpu_seconds) * 1000 / len(objs), 1),
    }
    say(f"figures so far: {json.dumps(result)}")
    say(f"steady state: counting writes for {args.steady:.0f}s")
    w0 = writes(plane.metrics())
    c0 = proc_stat(pid).cpu_seconds
    time.sleep(args.steady)
    result["steady_seconds"] = args.steady
    steady_metrics = plane.metrics()
    steady = writes(steady_metrics) - w0
    result["steady_writes"] = steady.objects  # Events apart; ConfigMap writes included
    result["steady_events"] = steady.events
    # The gauge can lag the claims for a moment after Ready (a reservation settles when its order is
    # next reconciled with its claims allocated); after the steady window it must read 0.
    result["steady_overcommitted_gauge"] = int(
        metric_sum(steady_metrics, "inference_controller_overcommitted_devices")
    )
    end = proc_stat(pid)
    result["steady_cpu_percent"] = round((end.cpu_seconds - c0) * 100 / args.steady, 1)
    result["controller_rss_mb"] = round(end.rss_mb, 1)
    if not args.no_restart:
        say("SIGKILL of the controller and a new one")
        result.update(restart(plane, tracker, len(objs), args.timeout))
    out = args.plot or plane.demo.state / f"scale-{args.nodes}-{args.orders}.png"
    plot(
        tracker.samples,
        applied=t_applied,
        orders=len(objs),
        title=f"{result['orders']} orders on {nodes} KWOK nodes ({len(fleet)} devices)",
        out=out,
    )
    result["plot"] = str(out.resolve().relative_to(ROOT) if out.resolve().is_relative_to(ROOT) else out)
    tracker.stop()
    if not args.keep:
        stop_all(plane.demo.state)
        plane.cluster_down()
    return result


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    result = run(args)
    print(json.dumps(result), flush=True)
    return 0
