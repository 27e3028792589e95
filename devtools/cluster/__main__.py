"""``python -m devtools.cluster up [--metrics]|down [--purge]|metrics-up [HOST:PORT]|metrics-down|status|env|build-metrics``.

``up --metrics`` (or ``INFERENCE_PLANE_METRICS=1``) also starts Prometheus and KEDA; ``metrics-up
[HOST:PORT]`` and ``metrics-down`` start or stop only them on a running plane (``metrics-up`` prints
Prometheus's URL; with HOST:PORT, the runtime stand-in's control address, Prometheus scrapes the orders'
pods there, set by a reload when it runs already); ``down`` stops everything. ``build-metrics``
builds Prometheus and KEDA into the cache and prints their bin directories (``build.sh`` does not build
them; ``up --metrics`` builds what is missing)."""

from __future__ import annotations

import shutil
import sys

from devtools.cluster import config, launcher


def build_metrics() -> int:
    """Prometheus, then KEDA, built if missing; their bin directories printed, or the error."""
    from devtools.cluster.components import keda, prometheus

    try:
        print(prometheus.build())
        print(keda.build())
    except (prometheus.PrometheusError, keda.KedaError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


def main(argv: list[str]) -> int:
    cmd = argv[0] if argv else "status"
    if cmd == "up":
        launcher.up(metrics=True if "--metrics" in argv else None)
        return 0
    if cmd == "metrics-up":
        target = next((a for a in argv[1:] if not a.startswith("-")), None)
        print(launcher.start_metrics(target=target).prometheus_url)
        return 0
    if cmd == "metrics-down":
        launcher.stop_metrics()
        return 0
    if cmd == "down":
        launcher.down()
        if "--purge" in argv:
            shutil.rmtree(config.STATE, ignore_errors=True)
        return 0
    if cmd == "status":
        return launcher.status()
    if cmd == "build-metrics":
        return build_metrics()
    if cmd == "env":
        print(f"export KUBECONFIG={config.P.kubeconfig}")
        return 0
    print(
        "usage: python -m devtools.cluster "
        "up [--metrics]|down [--purge]|metrics-up [HOST:PORT]|metrics-down|status|env|build-metrics",
        file=sys.stderr,
    )
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
