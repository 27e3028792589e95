"""Prometheus 3.x on the local plane: built pinned from its Go module and cached, started on demand as a plane daemon.

The version is pinned in devtools/cluster/versions.env (PROMETHEUS_VERSION) as the release, ``v3.16.0``.
Prometheus publishes its 3.x releases on the Go module proxy as ``github.com/prometheus/prometheus``
``v0.3MM.P`` (3.16.0 is v0.316.0; ``module_version`` converts). ``build`` compiles upstream's own
``cmd/prometheus`` and ``cmd/promtool`` in the module's own tree (its go.mod and go.sum as upstream
tested them) into ``<cache>/prometheus-<version>/bin/``, with upstream's ``netgo`` tag and version
ldflags (.promu.yml). Not ``builtinassets``: the web UI's assets are made by an npm build that is not
in the module, so the binary serves the API, the scraping and ``/metrics`` but no UI pages.

    python -m devtools.cluster build-metrics     # builds Prometheus and KEDA, prints the bin directories

    python -m devtools.cluster up --metrics      # the plane with Prometheus and KEDA started

Started as a plane daemon (``prometheus``, pid and log beside the plane's) by ``start(plane)``:
``--config.file=<state>/prometheus/prometheus.yml``, ``--storage.tsdb.path=<state>/prometheus/data``,
``--web.listen-address=127.0.0.1:<api port + 4>`` and ``--web.enable-lifecycle``, so that
``set_scrape_target`` can rewrite the configuration and reload it (``POST /-/reload``) once the address
it scrapes is known. ``ready(plane)``: ``GET /-/ready`` answers 200. ``address(plane)`` is the URL a
client (the controller's ``prometheusServerAddress``, KEDA's prometheus trigger) queries.

The configuration (``config``): scrape every 5 s, one job ``inference-runtime``: the pods of the plane,
discovered with ``kubernetes_sd_configs`` (role pod) through the plane's kubeconfig, kept when they
carry the order label (``shared.names.LABEL_ORDER``), labelled ``namespace``, ``pod`` and ``order`` (that
label's value), and scraped at the runtime stand-in's control address, ``http://<target>/_standin/metrics/
<namespace>/<pod>``: KWOK's pods have no reachable IPs, so the stand-in answers for each pod. Without a
target the job is left out (nothing to scrape).

A second job, ``inference-activator``, scrapes the activator's admin ``/metrics`` at HOST:PORT when the
plane runs one (``set_activator_target``): its ``inference_activator_requests_held{namespace,order}`` is
the wake-up signal an order's ScaledObject adds to its query. ``honor_labels: true``: the series' own
``namespace`` and ``order`` name the order, as a cluster's scrape of the activator's pods keeps them.
"""

from __future__ import annotations

import os
import pathlib
import re
import urllib.error
import urllib.request
from collections.abc import Mapping
from typing import Any

import yaml

from devtools.cluster import daemons
from devtools.cluster.components.base import Plane
from devtools.cluster.config import Paths, VersionError, cache_root, log, pinned_version
from devtools.cluster.gomod import GoModuleError, build_in_module
from shared.names import LABEL_ORDER

MODULE = "github.com/prometheus/prometheus"
BINARIES = ("prometheus", "promtool")
TAGS = ("netgo",)
PROCESS = "prometheus"
JOB = "inference-runtime"
ACTIVATOR_JOB = "inference-activator"
SCRAPE_INTERVAL = "5s"
METRICS_PATH = "/_standin/metrics"
_RELEASE = re.compile(r"v3\.(\d+)\.(\d+)(-[0-9A-Za-z.-]+)?")


class PrometheusError(RuntimeError):
    """Prometheus's version is not a 3.x release, or its module could not be fetched or built."""


def version() -> str:
    try:
        return pinned_version("PROMETHEUS_VERSION")
    except VersionError as e:
        raise PrometheusError(str(e)) from e


def module_version(release: str) -> str:
    """The Go module version of a Prometheus 3.x release: ``v3.16.0`` -> ``v0.316.0``."""
    m = _RELEASE.fullmatch(release)
    if m is None or int(m[1]) > 99:
        raise PrometheusError(f"not a Prometheus 3.x release: {release!r} (expected v3.MINOR.PATCH)")
    return f"v0.{300 + int(m[1])}.{m[2]}{m[3] or ''}"


def bin_dir(*, pinned: str | None = None, env: Mapping[str, str] | None = None) -> pathlib.Path:
    """``<cache>/prometheus-<release>/bin``."""
    return cache_root(env) / f"prometheus-{pinned or version()}" / "bin"


def ldflags(release: str) -> str:
    """Upstream's version stamps (.promu.yml), so ``prometheus --version`` names the release."""
    pkg = "github.com/prometheus/common/version"
    return (
        f"-s -w -X {pkg}.Version={release.removeprefix('v')} -X {pkg}.Revision=module-proxy-{release}"
        f" -X {pkg}.Branch=module-proxy -X {pkg}.BuildUser=inference-control-plane"
    )


def build(*, pinned: str | None = None, env: Mapping[str, str] | None = None) -> pathlib.Path:
    """``<cache>/prometheus-<release>/bin`` with ``prometheus`` and ``promtool``, built if missing."""
    release = pinned or version()
    environ = dict(os.environ if env is None else env)
    out = bin_dir(pinned=release, env=environ)
    builds = [(f"{MODULE}/cmd/{b}", out / b, ldflags(release)) for b in BINARIES]
    try:
        build_in_module(
            MODULE, module_version(release), builds, cache=cache_root(environ), environ=environ, tags=TAGS
        )
    except GoModuleError as e:
        raise PrometheusError(str(e)) from e
    return out


def label_meta(label: str) -> str:
    """The discovery meta label of a pod label: ``__meta_kubernetes_pod_label_<name>`` with every
    character outside ``[a-zA-Z0-9_]`` made ``_`` (Prometheus's sanitising)."""
    return "__meta_kubernetes_pod_label_" + re.sub(r"[^a-zA-Z0-9_]", "_", label)


def config(
    *,
    kubeconfig: pathlib.Path,
    target: str | None,
    interval: str = SCRAPE_INTERVAL,
    activator: str | None = None,
) -> dict[str, Any]:
    """prometheus.yml: the ``inference-runtime`` job scraping each order's pod at ``target`` (HOST:PORT,
    the runtime stand-in's control address), or no such job when ``target`` is None; the
    ``inference-activator`` job scraping ``http://<activator>/metrics`` when ``activator`` is given."""
    cfg: dict[str, Any] = {
        "global": {"scrape_interval": interval, "evaluation_interval": interval},
        "scrape_configs": [],
    }
    if activator is not None:
        cfg["scrape_configs"].append(
            {
                "job_name": ACTIVATOR_JOB,
                "scheme": "http",
                "metrics_path": "/metrics",
                "honor_labels": True,
                "static_configs": [{"targets": [activator]}],
            }
        )
    if target is None:
        return cfg
    order = label_meta(LABEL_ORDER)
    cfg["scrape_configs"].append(
        {
            "job_name": JOB,
            "scheme": "http",
            "kubernetes_sd_configs": [{"role": "pod", "kubeconfig_file": str(kubeconfig)}],
            "relabel_configs": [
                {"source_labels": [order], "regex": ".+", "action": "keep"},
                {"source_labels": ["__meta_kubernetes_namespace"], "target_label": "namespace"},
                {"source_labels": ["__meta_kubernetes_pod_name"], "target_label": "pod"},
                {"source_labels": [order], "target_label": "order"},
                {"target_label": "__address__", "replacement": target},
                {
                    "source_labels": ["__meta_kubernetes_namespace", "__meta_kubernetes_pod_name"],
                    "separator": "/",
                    "regex": "(.+)",
                    "target_label": "__metrics_path__",
                    "replacement": f"{METRICS_PATH}/$1",
                },
            ],
        }
    )
    return cfg


def home(paths: Paths) -> pathlib.Path:
    return paths.root / "prometheus"


def config_file(paths: Paths) -> pathlib.Path:
    return home(paths) / "prometheus.yml"


def write_config(paths: Paths, target: str | None, activator: str | None = None) -> pathlib.Path:
    f = config_file(paths)
    f.parent.mkdir(parents=True, exist_ok=True)
    tmp = f.with_name(f.name + ".tmp")
    cfg = config(kubeconfig=paths.kubeconfig, target=target, activator=activator)
    tmp.write_text(yaml.safe_dump(cfg, sort_keys=False))
    tmp.replace(f)
    return f


def _jobs(paths: Paths) -> list[dict[str, Any]]:
    f = config_file(paths)
    if not f.exists():
        return []
    return list((yaml.safe_load(f.read_text()) or {}).get("scrape_configs") or [])


def scrape_target(paths: Paths) -> str | None:
    """The stand-in target of the configuration on disk, or None."""
    for job in _jobs(paths):
        for rule in job.get("relabel_configs") or []:
            if rule.get("target_label") == "__address__":
                return str(rule["replacement"])
    return None


def activator_target(paths: Paths) -> str | None:
    """The activator's admin HOST:PORT in the configuration on disk, or None."""
    for job in _jobs(paths):
        if job.get("job_name") == ACTIVATOR_JOB:
            return str(job["static_configs"][0]["targets"][0])
    return None


def address(plane: Plane) -> str:
    """``http://127.0.0.1:<port>``: where to query Prometheus."""
    return f"http://127.0.0.1:{plane.prometheus_port}"


def argv(plane: Plane) -> list[str]:
    return [
        str(bin_dir() / "prometheus"),
        f"--config.file={config_file(plane.paths)}",
        f"--storage.tsdb.path={home(plane.paths) / 'data'}",
        "--storage.tsdb.retention.time=6h",
        f"--web.listen-address=127.0.0.1:{plane.prometheus_port}",
        "--web.enable-lifecycle",
        "--log.level=info",
    ]


def start(plane: Plane, *, target: str | None = None) -> None:
    """The daemon started unless it runs (the configuration written first if missing, or with
    ``target``); a running one gets ``target`` by a reload."""
    if daemons.pid(plane.paths, PROCESS) is not None:
        if target is not None:
            set_scrape_target(plane, target)
        return
    if target is not None or not config_file(plane.paths).exists():
        write_config(plane.paths, target, activator_target(plane.paths))
    daemons.start(plane.paths, PROCESS, argv(plane), ports=(plane.prometheus_port,))
    log(f"Prometheus at {address(plane)}")


def ready(plane: Plane) -> bool:
    """``GET /-/ready`` answers 200."""
    try:
        with urllib.request.urlopen(f"{address(plane)}/-/ready", timeout=2) as r:
            return bool(r.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def set_scrape_target(plane: Plane, target: str | None) -> None:
    """Rewrite the configuration for ``target`` (HOST:PORT) and have the running Prometheus reload it
    (the activator's job, if any, is kept)."""
    write_config(plane.paths, target, activator_target(plane.paths))
    _reload(plane)


def set_activator_target(plane: Plane, activator: str | None) -> None:
    """Scrape the activator's admin ``/metrics`` at ``activator`` (HOST:PORT; None: no longer), keeping
    the stand-in's target; the running Prometheus reloads."""
    write_config(plane.paths, scrape_target(plane.paths), activator)
    _reload(plane)


def _reload(plane: Plane) -> None:
    req = urllib.request.Request(f"{address(plane)}/-/reload", method="POST")
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            if r.status != 200:
                raise PrometheusError(f"reload answered {r.status}")
    except urllib.error.HTTPError as e:
        raise PrometheusError(f"reload failed ({e.code}): {e.read().decode(errors='replace')}") from e


def stop(plane: Plane) -> None:
    daemons.stop(plane.paths, PROCESS)
