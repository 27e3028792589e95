"""KEDA v2 on the local plane: operator, metrics API server and admission webhooks, built pinned from
the Go module and cached, not started yet.

The version is pinned in devtools/cluster/versions.env (KEDA_VERSION). ``build`` compiles upstream's own
mains (``cmd/operator``, ``cmd/adapter``, ``cmd/webhooks`` of ``github.com/kedacore/keda/v2``) in the
module's own tree, so its go.mod replace directive (nexus-proto-annotations in v2.21.0) holds, which a
``go get`` into a scratch module would drop. The binaries take upstream's image names (KEDA's Makefile):
``keda``, ``keda-adapter``, ``keda-admission-webhooks``, under ``<cache>/keda-<version>/bin/``, static
(``CGO_ENABLED=0`` as upstream's default) with upstream's version ldflags.

    python -m devtools.cluster build-metrics     # builds Prometheus and KEDA, prints the bin directories

Nothing starts it yet (issue 22): ``start`` and ``ready`` raise NotImplementedError.
"""

from __future__ import annotations

import os
import pathlib
from collections.abc import Mapping

from devtools.cluster.config import VersionError, cache_root, pinned_version
from devtools.cluster.gomod import GoModuleError, build_in_module

MODULE = "github.com/kedacore/keda/v2"
# binary -> package: the operator (ScaledObject -> HPA), the external metrics API server the HPA
# reads, and the admission webhooks that validate ScaledObjects.
BINARIES = {
    "keda": f"{MODULE}/cmd/operator",
    "keda-adapter": f"{MODULE}/cmd/adapter",
    "keda-admission-webhooks": f"{MODULE}/cmd/webhooks",
}


class KedaError(RuntimeError):
    """KEDA's module could not be fetched or built."""


def version() -> str:
    try:
        return pinned_version("KEDA_VERSION")
    except VersionError as e:
        raise KedaError(str(e)) from e


def bin_dir(*, pinned: str | None = None, env: Mapping[str, str] | None = None) -> pathlib.Path:
    """``<cache>/keda-<version>/bin``."""
    return cache_root(env) / f"keda-{pinned or version()}" / "bin"


def ldflags(pinned: str) -> str:
    """Upstream's version stamps (KEDA's Makefile GO_LDFLAGS)."""
    pkg = f"{MODULE}/version"
    return f"-s -w -X {pkg}.Version={pinned} -X {pkg}.GitCommit=module-proxy-{pinned}"


def build(*, pinned: str | None = None, env: Mapping[str, str] | None = None) -> pathlib.Path:
    """``<cache>/keda-<version>/bin`` with the three binaries, built if missing."""
    v = pinned or version()
    environ = dict(os.environ if env is None else env)
    out = bin_dir(pinned=v, env=environ)
    builds = [(pkg, out / name, ldflags(v)) for name, pkg in BINARIES.items()]
    try:
        build_in_module(MODULE, v, builds, cache=cache_root(environ), environ=environ)
    except GoModuleError as e:
        raise KedaError(str(e)) from e
    return out


def start(target: object) -> object:
    raise NotImplementedError(
        "KEDA is built (devtools.cluster build-metrics) but not started on the plane yet (issue 22)"
    )


def ready(handle: object) -> bool:
    raise NotImplementedError("KEDA is not started on the plane yet (issue 22)")
