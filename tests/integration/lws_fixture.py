"""LeaderWorkerSet on the real local control plane, for tests that need it.

``lws`` (session fixture): LWS's CRDs installed, its controller (devtools/cluster/components/lws.py,
built from the Go module proxy, cached) running as a local process, its webhooks registered under the
names ``lws-e2e-*`` (the demo's are ``lws-*``). Import it where it is needed::

    from tests.integration.lws_fixture import lws  # noqa: F401
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from devtools.cluster.components import lws as lws_plane
from devtools.cluster.components.base import Target
from devtools.cluster.handle import Cluster, Kubectl


@pytest.fixture(scope="session")
def lws(
    cluster: Cluster, kubectl: Kubectl, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[lws_plane.Running]:
    binary = lws_plane.build()
    lws_plane.install_crds(kubectl.out, field_manager="test-lws")
    state = tmp_path_factory.mktemp("lws")
    target = Target(cluster.kubeconfig, state, kubectl.out, field_manager="test-lws")

    def delete(kind: str, name: str) -> object:
        return kubectl("delete", kind.lower(), name, "--ignore-not-found", check=False)

    running = lws_plane.start(target, prefix="lws-e2e-", binary=binary)
    try:
        yield running
    finally:
        lws_plane.stop(running, state=state, delete=delete)
        print(f"lws-controller log: {running.process.log}")
