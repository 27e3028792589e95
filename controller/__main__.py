"""``python -m controller``: the command line. Reads the settings, starts metrics and health, the
informers (``manager.Controller``) and leader election, and runs until SIGTERM/SIGINT.

Losing the lease stops the process, as controller-runtime does, so two replicas never reconcile
at once.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from controller.config.settings import Settings, SettingsError, parse_settings
from controller.health import HealthServer
from controller.kube import apply as kapi
from controller.kube import errors as kerr
from controller.kube.client import load_api_client
from controller.kube.leader import LeaderElector
from controller.manager import Controller

log = logging.getLogger("controller")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m controller", description=__doc__.splitlines()[0] if __doc__ else None
    )
    p.add_argument(
        "--kubeconfig", default=os.environ.get("KUBECONFIG"), help="kubeconfig; in-cluster when unset"
    )
    p.add_argument(
        "--namespace",
        default=os.environ.get("POD_NAMESPACE", "d8-inference"),
        help="namespace of the module settings ConfigMap and of the leader-election Lease",
    )
    p.add_argument(
        "--settings-configmap", default="inference-settings", help="name of the module settings ConfigMap"
    )
    p.add_argument("--workers", type=int, default=4, help="reconcile workers")
    p.add_argument("--metrics-port", type=int, default=8080, help="port of /metrics (0: off)")
    p.add_argument("--health-port", type=int, default=8081, help="port of /healthz and /readyz (0: off)")
    p.add_argument("--bind-address", default="0.0.0.0", help="address the metrics and health servers bind")
    p.add_argument(
        "--leader-elect",
        dest="leader_elect",
        action="store_true",
        default=True,
        help="elect a leader on a Lease (default)",
    )
    p.add_argument("--no-leader-elect", dest="leader_elect", action="store_false", help="run without a Lease")
    p.add_argument("--lease-name", default="inference-controller")
    p.add_argument("--lease-duration", type=float, default=15.0, help="seconds a leader's Lease is valid")
    p.add_argument("--renew-deadline", type=float, default=10.0, help="seconds a leader may fail to renew")
    p.add_argument("--retry-period", type=float, default=2.0, help="seconds between Lease attempts")
    p.add_argument(
        "--identity", default=os.environ.get("POD_NAME") or f"{socket.gethostname()}-{os.getpid()}"
    )
    p.add_argument("--log-level", default=os.environ.get("LOG_LEVEL", "INFO"))
    return p.parse_args(argv)


def load_settings(
    api: Any, namespace: str, name: str, *, wait: float = 300.0, sleep: Callable[[float], None] = time.sleep
) -> Settings:
    """The module settings. An API server that cannot be reached yet (a restart, a network blip) is
    waited for, with backoff, up to ``wait`` seconds, as controller-runtime managers do."""
    delay, waited = 1.0, 0.0
    while True:
        try:
            cm = kapi.get(api, "v1", "ConfigMap", namespace=namespace, name=name)
            break
        except kerr.ApiUnavailable as e:
            if waited >= wait:
                raise
            log.warning("the API server cannot be reached (%s); trying again in %.0fs", e, delay)
            sleep(delay)
            waited += delay
            delay = min(delay * 2, 15.0)
    if cm is None:
        log.warning("module settings ConfigMap %s/%s not found; using defaults", namespace, name)
    return parse_settings((cm or {}).get("data"), os.environ)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(
        level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    api = load_api_client(kubeconfig=args.kubeconfig)
    try:
        settings = load_settings(api, args.namespace, args.settings_configmap)
    except SettingsError as e:
        log.error("%s", e)
        return 2
    try:
        ctl = Controller(args, api, settings)
    except OSError as e:  # the platform CA bundle named by a setting cannot be read
        log.error(
            "module setting `platformCAFile`: cannot read %r: %s", settings.platform_ca_file, e.strerror or e
        )
        return 2
    health = HealthServer(
        registry=ctl.registry,
        metrics_port=args.metrics_port,
        health_port=args.health_port,
        bind_address=args.bind_address,
        ready=ctl.synced,
    )
    health.start()
    done = threading.Event()

    def on_signal(signum: int, _frame: object) -> None:
        log.info("signal %d: shutting down", signum)
        done.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    ctl.start_informers()
    elector: LeaderElector | None = None
    if args.leader_elect:
        elector = LeaderElector(
            api,
            namespace=args.namespace,
            name=args.lease_name,
            identity=args.identity,
            lease_duration=args.lease_duration,
            renew_deadline=args.renew_deadline,
            retry_period=args.retry_period,
            on_started_leading=ctl.start_workers,
            on_stopped_leading=done.set,
        )
        elector.start()
    else:
        ctl.start_workers()
    done.wait()
    ctl.stop()
    if elector is not None:
        elector.stop()
    health.stop()
    log.info("stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
