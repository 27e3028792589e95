"""Prometheus 3.x on the local plane: built pinned from its Go module and cached, not started yet.

The version is pinned in devtools/cluster/versions.env (PROMETHEUS_VERSION) as the release, ``v3.16.0``.
Prometheus publishes its 3.x releases on the Go module proxy as ``github.com/prometheus/prometheus``
``v0.3MM.P`` (3.16.0 is v0.316.0; ``module_version`` converts). ``build`` compiles upstream's own
``cmd/prometheus`` and ``cmd/promtool`` in the module's own tree (its go.mod and go.sum as upstream
tested them) into ``<cache>/prometheus-<version>/bin/``, with upstream's ``netgo`` tag and version
ldflags (.promu.yml). Not ``builtinassets``: the web UI's assets are made by an npm build that is not
in the module, so the binary serves the API, the scraping and ``/metrics`` but no UI pages.

    python -m devtools.cluster build-metrics     # builds Prometheus and KEDA, prints the bin directories

Nothing starts it yet (issue 22: ``make up`` and the fixtures that need it will): ``start`` and
``ready`` raise NotImplementedError.
"""

from __future__ import annotations

import os
import pathlib
import re
from collections.abc import Mapping

from devtools.cluster.config import VersionError, cache_root, pinned_version
from devtools.cluster.gomod import GoModuleError, build_in_module

MODULE = "github.com/prometheus/prometheus"
BINARIES = ("prometheus", "promtool")
TAGS = ("netgo",)
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


def start(target: object) -> object:
    raise NotImplementedError(
        "Prometheus is built (devtools.cluster build-metrics) but not started on the plane yet (issue 22)"
    )


def ready(handle: object) -> bool:
    raise NotImplementedError("Prometheus is not started on the plane yet (issue 22)")
