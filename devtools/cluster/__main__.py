"""``python -m devtools.cluster up|down|status|env|build-metrics``.

``build-metrics`` builds Prometheus and KEDA into the cache (issue 22; nothing starts them yet) and prints
their bin directories; ``build.sh`` and ``make up`` do not build them."""

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
        launcher.up()
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
    print("usage: python -m devtools.cluster up|down [--purge]|status|env|build-metrics", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
