"""Fixtures for tests against the real local control plane.

- ``cluster`` (session): starts the plane once (``python -m devtools.cluster up``), reused when up
  (``Cluster`` and ``Kubectl`` are devtools/cluster/handle.py);
- ``api``: a kubernetes ApiClient for the admin kubeconfig;
- ``kubectl``: runs our built kubectl with that kubeconfig;
- ``namespace``: a fresh namespace per test, deleted afterwards;
- ``crds``: our CRDs (and the catalog stand-in CRDs) installed and Established;
- ``wait_for``: poll a function until a predicate holds, failing with the last value seen.
"""

from __future__ import annotations

import pathlib
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import pytest
from kubernetes import client as k8s
from kubernetes import config as k8s_config

from devtools import wait
from devtools.cluster.components import keda
from devtools.cluster.handle import Cluster, Kubectl, running_cluster

T = TypeVar("T")
ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def cluster() -> Cluster:
    return running_cluster()


@pytest.fixture(scope="session")
def api(cluster: Cluster) -> Iterator[k8s.ApiClient]:
    c: k8s.ApiClient = k8s_config.new_client_from_config(config_file=str(cluster.kubeconfig))  # type: ignore[no-untyped-call]
    yield c
    c.close()  # type: ignore[no-untyped-call]


@pytest.fixture(scope="session")
def kubectl(cluster: Cluster) -> Kubectl:
    return Kubectl(cluster)


@pytest.fixture
def namespace(api: k8s.ApiClient, request: pytest.FixtureRequest) -> Iterator[str]:
    base = request.node.name.lower().replace("_", "-")
    base = "".join(ch for ch in base if ch.isalnum() or ch == "-")[:40].strip("-")
    name = f"t-{base}-{uuid.uuid4().hex[:5]}"
    core = k8s.CoreV1Api(api)
    core.create_namespace(
        k8s.V1Namespace(metadata=k8s.V1ObjectMeta(name=name, labels={"inference-test": "true"}))
    )
    yield name
    core.delete_namespace(name, propagation_policy="Background")


def wait_for(
    fetch: Callable[[], T],
    predicate: Callable[[T], bool],
    *,
    timeout: float = 30.0,
    interval: float = 0.25,
    message: str = "condition",
) -> T:
    """devtools.wait.wait_for, failing the test with the last value seen (no traceback) on a timeout."""
    try:
        return wait.wait_for(fetch, predicate, timeout=timeout, interval=interval, message=message)
    except wait.WaitTimeoutError as e:
        pytest.fail(str(e), pytrace=False)


@pytest.fixture(name="wait_for")
def wait_for_fixture() -> Callable[..., Any]:
    return wait_for


@pytest.fixture(scope="session")
def crds(kubectl: Kubectl) -> None:
    """Our CRDs and the catalog stand-in CRDs, applied and Established."""
    kubectl(
        "apply",
        "--server-side",
        "--force-conflicts",
        "-f",
        str(ROOT / "deploy" / "crds" / "inferenceservices.yaml"),
        "-f",
        str(ROOT / "deploy" / "crds" / "inferenceserviceclasses.yaml"),
        "-f",
        str(ROOT / "deploy" / "crds" / "inferencerecipes.yaml"),
        "-f",
        str(ROOT / "tests" / "manifests" / "catalog-crds.yaml"),
        "-f",
        str(keda.crds_dir()),  # every single-node order has a ScaledObject, KEDA running or not
    )
    names = (
        "scaledobjects.keda.sh",
        "inferenceservices.ai.deckhouse.io",
        "inferenceserviceclasses.ai.deckhouse.io",
        "inferencerecipes.ai.deckhouse.io",
        "models.ai.deckhouse.io",
        "clustermodels.ai.deckhouse.io",
    )
    # On a plane started a moment ago a new CRD may have no status.conditions yet, and kubectl wait
    # then fails at once instead of waiting (seen once): ask again, a few times, before failing.
    for _ in range(5):
        if (
            kubectl(
                "wait", "--for=condition=Established", "--timeout=60s", "crd", *names, check=False
            ).returncode
            == 0
        ):
            return
        time.sleep(1)
    kubectl("wait", "--for=condition=Established", "--timeout=60s", "crd", *names)
