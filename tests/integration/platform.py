"""The e2e fixtures: ``platform`` (module scope), the product running against the real control plane
(testkit/platform.py), and ``ns``, a namespace per test. Import them from a conftest::

    from tests.integration.platform import ns, platform  # noqa: F401
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from kubernetes import client as k8s

from devtools.cluster.components import lws as lws_plane
from devtools.cluster.handle import Cluster, Kubectl
from testkit.platform import Platform, running_platform


@pytest.fixture(scope="module")
def platform(
    cluster: Cluster,
    kubectl: Kubectl,
    api: k8s.ApiClient,
    crds: None,
    lws: lws_plane.Running,  # multi-node orders run on LeaderWorkerSet (tests/integration/lws_fixture.py)
    request: pytest.FixtureRequest,
) -> Iterator[Platform]:
    """Every module runs the real cert-manager with the shipped endpoint PKI (testkit/endpoint_pki.py).
    A module that sets ``PLATFORM_HOSTILE_HUB = True`` gets a Hub mirror that also serves the hostile
    repositories (standins/hub_mirror/hostile.py); one that sets ``PLATFORM_REAL_RUNTIME = True`` gets the
    tiny models in the mirror and the plane runner, a real vLLM behind their orders; one that sets
    ``PLATFORM_AUTOSCALING = True`` gets Prometheus and KEDA on the plane (testkit/autoscaling.py),
    Prometheus at ``platform.prometheus_url``; one that sets ``PLATFORM_ACTIVATOR = True`` gets the
    activator as a process under its ServiceAccount (testkit/activator.py), its admin listener at
    ``platform.activator_url`` (``PLATFORM_ACTIVATOR_MAX_HOLD_SECONDS`` bounds its holds, default 300)."""
    hostile = bool(getattr(request.module, "PLATFORM_HOSTILE_HUB", False))
    real = bool(getattr(request.module, "PLATFORM_REAL_RUNTIME", False))
    scaling = bool(getattr(request.module, "PLATFORM_AUTOSCALING", False))
    activator = bool(getattr(request.module, "PLATFORM_ACTIVATOR", False))
    max_hold = float(getattr(request.module, "PLATFORM_ACTIVATOR_MAX_HOLD_SECONDS", 300.0))
    with running_platform(
        cluster,
        kubectl,
        api,
        hostile_hub=hostile,
        real_runtime=real,
        autoscaling=scaling,
        activator=activator,
        activator_max_hold_seconds=max_hold,
    ) as p:
        yield p


@pytest.fixture
def ns(platform: Platform, request: pytest.FixtureRequest) -> Iterator[str]:
    """A namespace for one test, deleted (and waited for, so its GPUs are free again) afterwards."""
    base = "".join(ch for ch in request.node.name.lower().replace("_", "-") if ch.isalnum() or ch == "-")
    name = f"e-{base[5:35].strip('-')}-{uuid.uuid4().hex[:4]}"
    platform.kubectl("create", "namespace", name)
    yield name
    platform.delete_namespace_and_wait(name)
