"""The scale benchmark, small, as an end-to-end test of correctness (never of time): 100 KWOK nodes
and 200 orders of mixed models on a plane of its own (its own state dir and ports, so the shared
test plane and its fleet are untouched), through ``python -m bench.scale``.

Asserted: no device given out twice (the claims, and the controller's own gauge); every order that
fits is Ready and the count that does not fit matches the offline packing; statuses are true (an
order whose pod runs is Ready); no write in steady state; a SIGKILLed controller comes back with
no write, at most one Hub call per model, and every order still Ready.

``SCALE_E2E_NODES`` / ``SCALE_E2E_ORDERS`` change the size.
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
from typing import Any

import pytest

from devtools.cluster import config

pytestmark = pytest.mark.cluster

ROOT = pathlib.Path(__file__).resolve().parents[3]
NODES = int(os.environ.get("SCALE_E2E_NODES", "100"))
ORDERS = int(os.environ.get("SCALE_E2E_ORDERS", "200"))


def plane_env() -> dict[str, str]:
    return {
        **{k: v for k, v in os.environ.items() if not k.startswith(("HF_", "KUBECONFIG"))},
        "INFERENCE_CLUSTER_DIR": str(config.STATE / "scale-e2e"),
        "INFERENCE_API_PORT": str(config.API_PORT + 100),
        "INFERENCE_ETCD_PORT": str(config.ETCD_PORT + 100),
    }


def run_bench(env: dict[str, str]) -> dict[str, Any]:
    argv = [sys.executable, "-m", "bench.scale", "--nodes", str(NODES), "--orders", str(ORDERS)]
    argv += ["--steady", "40", "--timeout", "600", "--workers", "16"]  # steady > the 30 s probe period
    res = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=1200, check=False)
    log = pathlib.Path(env["INFERENCE_CLUSTER_DIR"]) / "bench-scale.out"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text(res.stdout + "\n--- stderr ---\n" + res.stderr)
    assert res.returncode == 0, f"bench.scale failed ({res.returncode}); see {log}:\n{res.stderr[-3000:]}"
    figures: dict[str, Any] = json.loads(res.stdout.strip().splitlines()[-1])
    return figures


def test_a_hundred_nodes_and_two_hundred_orders_end_true_with_no_overcommit() -> None:
    env = plane_env()
    try:
        f = run_bench(env)
    finally:
        subprocess.run([sys.executable, "-m", "devtools.cluster", "down"], cwd=ROOT, env=env, check=False)
    print(json.dumps(f))
    assert f["orders"] == ORDERS
    assert f["nodes"] == NODES
    assert f["overcommitted"] == 0
    assert f["steady_overcommitted_gauge"] == 0, f"the gauge read {f['overcommitted_gauge']} at Ready"
    assert f["refused"] == 0, "every model of the mix is allowed by the bundled class"
    assert f["ready"] == f["planned"] == ORDERS - f["no_capacity"]
    assert f["no_capacity"] == f["offline_no_capacity"]
    # the planner places orders as they come and never moves one: never fewer left out than the optimum
    assert f["no_capacity"] >= f["optimal_no_capacity"]
    assert f["running_not_ready"] == 0
    # Every write the controller sends is counted (the model-facts ConfigMap too), Events apart.
    assert f["steady_writes"] == 0
    assert f["steady_events"] == 0
    assert f["restart_writes"] == 0
    assert f["restart_events"] == 0
    assert f["restart_ready_after"] == f["ready"]
    assert f["restart_hub_calls"] <= f["models"]
