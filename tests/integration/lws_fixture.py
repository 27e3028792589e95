"""LeaderWorkerSet on the real local control plane, for tests that need it.

``lws`` (session fixture): LWS's CRDs installed, its controller (built from the Go module proxy by
hack/lws.py, cached) running as a local process, its webhooks registered under the names
``lws-e2e-*`` (the demo's are ``lws-*``). Import it where it is needed::

    from tests.integration.lws_fixture import lws  # noqa: F401
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from hack import lws as lws_plane
from tests.integration.conftest import Cluster, Kubectl


@pytest.fixture(scope="session")
def lws(
    cluster: Cluster, kubectl: Kubectl, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[lws_plane.Running]:
    binary = lws_plane.build_binary()

    def run(*args: str, input: str | None = None, check: bool = True) -> str:
        return kubectl(*args, input=input, check=check).stdout

    lws_plane.install_crds(run, field_manager="test-lws")
    state = tmp_path_factory.mktemp("lws")

    def apply(text: str) -> object:
        return kubectl(
            "apply", "--server-side", "--force-conflicts", "--field-manager=test-lws", "-f", "-", input=text
        )

    def delete(kind: str, name: str) -> object:
        return kubectl("delete", kind.lower(), name, "--ignore-not-found", check=False)

    running = lws_plane.start(
        kubeconfig=cluster.kubeconfig, state=state, apply=apply, binary=binary, prefix="lws-e2e-"
    )
    try:
        yield running
    finally:
        lws_plane.stop(running, state=state, delete=delete)
        print(f"lws-controller log: {running.process.log}")
