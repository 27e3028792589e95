"""cert-manager on the real local control plane, for tests that need certificates issued for real.

``running_cert_manager`` installs cert-manager's CRDs and runs its controller (and, when asked, the
cainjector), built from the cert-manager Go module by devtools/cluster/components/cert_manager.py (cached), as local
processes until the ``with`` block ends; ``controller_args`` adds flags to the controller (approver-policy's
``CERT_MANAGER_CONTROLLERS``) and ``kubeconfig`` runs the processes as another user than the admin. ``renew`` triggers a re-issuance the way ``cmctl renew``
does (cert-manager/cmctl pkg/renew): it sets the Certificate's ``Issuing`` condition to True with
reason ``ManuallyTriggered`` through the status subresource, and cert-manager issues anew (a new
private key with ``rotationPolicy: Always``).
"""

from __future__ import annotations

import json
import pathlib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime

from devtools.cluster.components import cert_manager
from devtools.cluster.components.base import Target
from devtools.cluster.handle import Cluster, Kubectl


@contextmanager
def running_cert_manager(
    cluster: Cluster,
    kubectl: Kubectl,
    state: pathlib.Path,
    *,
    binaries: tuple[str, ...] = cert_manager.BINARIES,
    field_manager: str = "test-cert-manager",
    controller_args: Sequence[str] = (),
    kubeconfig: pathlib.Path | None = None,
) -> Iterator[None]:
    target = Target(cluster.kubeconfig, state, kubectl.out, field_manager=field_manager)
    with cert_manager.running(
        target, binaries=binaries, controller_args=controller_args, kubeconfig=kubeconfig
    ):
        yield


def renew(kubectl: Kubectl, namespace: str, name: str, *, attempts: int = 5) -> None:
    """``cmctl renew``: the Certificate's Issuing condition set True (reason ManuallyTriggered), by an
    update of its status; on a conflict (cert-manager wrote meanwhile) it re-reads and retries."""
    for _ in range(attempts):
        crt = json.loads(kubectl("get", "certificate", name, "-n", namespace, "-o", "json").stdout)
        now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        issuing = {
            "type": "Issuing",
            "status": "True",
            "reason": "ManuallyTriggered",
            "message": "Certificate re-issuance manually triggered",
            "lastTransitionTime": now,
            "observedGeneration": crt["metadata"]["generation"],
        }
        status = crt.setdefault("status", {})
        status["conditions"] = [c for c in status.get("conditions") or [] if c["type"] != "Issuing"] + [
            issuing
        ]
        res = kubectl("replace", "--subresource=status", "-f", "-", input=json.dumps(crt), check=False)
        if res.returncode == 0:
            return
        if "the object has been modified" not in res.stderr:
            raise AssertionError(f"kubectl replace --subresource=status failed: {res.stderr.strip()}")
    raise AssertionError(f"Certificate {namespace}/{name}: status update conflicted {attempts} times")
