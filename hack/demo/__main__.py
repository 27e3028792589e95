"""``python -m hack.demo demo|up|down|status`` (hack/demo/__init__.py)."""

from __future__ import annotations

import argparse
import concurrent.futures
import os
import subprocess
import sys
import time
from collections.abc import Sequence

from devtools import procs
from hack import demo as package
from hack.demo import steps
from hack.demo.order import goodbye, order
from hack.demo.state import Demo, say


def up(demo: Demo) -> None:
    t0 = time.monotonic()
    demo.state.mkdir(parents=True, exist_ok=True)
    steps.stop_processes(demo)  # `make up` twice restarts our processes, never duplicates them
    real = os.geteuid() == 0  # the plane runner mounts each container's volumes (unshare --mount)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        # On a cold machine the vLLM environment (pip: mostly downloads) builds beside the Go builds of
        # the plane (CPU), not after them.
        runtime_env = pool.submit(steps.real_runtime, demo) if real else None
        steps.cluster_up(demo)
        steps.install(demo)
        steps.make_pki(demo)
        if runtime_env is not None:
            runtime_env.result()
        else:
            say("not root: no plane runner, so the stand-in answers every order (the tiny one too)")
    hf_endpoint = steps.start_hub(demo)
    runtime, control = steps.start_runtime(demo)
    steps.configure(demo, runtime_address=runtime)
    if real:
        steps.start_plane_runner(demo, control_url=control)
    demo.write("planeRunner", real)
    steps.start_webhook(demo)
    steps.start_lws(demo)  # LeaderWorkerSet: CRDs, controller, webhooks
    steps.start_controller(demo, hf_endpoint=hf_endpoint)
    demo.write("runtimeAddress", runtime)
    demo.write("hfEndpoint", hf_endpoint)
    demo.write("mirror", not demo.env.get("HF_ENDPOINT"))
    say(f"up in {time.monotonic() - t0:.0f}s")


def status(demo: Demo) -> int:
    ok = True
    for name in steps.PROCESSES:
        pid = procs.running(name, state=demo.state)
        print(f"{name:16s} {'running pid ' + str(pid) if pid else 'stopped'}")
        ok = ok and (pid is not None or (name == "hub-mirror" and not demo.read("mirror")))
    return 0 if ok else 1


def main(argv: Sequence[str] | None = None) -> int:
    doc = package.__doc__
    parser = argparse.ArgumentParser(
        prog="python -m hack.demo", description=doc.splitlines()[0] if doc else None
    )
    parser.add_argument("command", choices=["demo", "up", "down", "status"])
    parser.add_argument(
        "--keep-cluster", action="store_true", help="down: leave the local control plane running"
    )
    args = parser.parse_args(argv)
    demo = Demo()
    try:
        if args.command == "status":
            return status(demo)
        if args.command == "down":
            steps.stop_processes(demo)
            if not args.keep_cluster:
                subprocess.run(
                    [demo.python, "-m", "devtools.cluster", "down"], cwd=demo.root, env=demo.env, check=True
                )
            return 0
        t0 = time.monotonic()
        up(demo)
        rc = order(demo) if args.command == "demo" else 0
        goodbye(demo, with_order=args.command == "demo")
        say(f"{args.command} took {time.monotonic() - t0:.0f}s")
        return rc
    except (procs.ProcessError, RuntimeError, subprocess.CalledProcessError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
