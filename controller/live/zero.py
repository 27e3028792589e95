"""Scale to zero, read from the live objects: where the activator answers, whether the order runs no
replica, and what WorkloadReady says then. Pure.

A class with ``minReplicas: 0`` gives its orders a KEDA ScaledObject that may take the Deployment to
0 replicas (``controller.render.network.autoscaler``). While an order has no ready replica, its
Service also points at the activator (``<order>-activator``, ``controller.render.network``), which
holds requests that carry the order's token until a replica is ready.

An order that has served (WorkloadReady was True) and now has no ready replica reads
``WorkloadReady=True/ScaledToZero``, as api.md section 6 says, in two cases only:

- **at zero**: the Deployment wants 0 replicas (KEDA took it there after the class's
  ``scaleToZeroAfterSeconds`` without a request);
- **waking**: the Deployment wants replicas again and its pods are starting, with nothing wrong
  (the plain verdict is ``Progressing``).

Anything else is judged as for any order: a pod that cannot be scheduled or created is reported as
it is. A new order is never ``ScaledToZero`` before its first replica has been ready: nothing has
shown yet that its workload starts.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from controller.live.workload import available_replicas
from controller.render.network import ActivatorTarget
from shared import reasons as r
from shared.api.condition import Condition
from shared.conditions import Verdict, find, true

Obj = dict[str, Any]

MAX_ACTIVATOR_ADDRESSES = 64  # an activator with more pods than this is listed by its first 64
AT_ZERO = "No replica runs"
WAKING = "Waking up"


def activator_target(slices: Iterable[Obj]) -> ActivatorTarget | None:
    """The activator's ready addresses and HTTPS port, from its Service's EndpointSlices (the module
    namespace's only: ``controller.kinds``). An endpoint counts unless it says it is not ready (an
    unset ``ready`` is read as ready, as the EndpointSlice API asks of consumers). None while no
    endpoint with a port named ``https`` is ready."""
    found: dict[str, tuple[int, set[str]]] = {}  # address type -> (port, addresses)
    for s in sorted(slices, key=lambda o: str((o.get("metadata") or {}).get("name", ""))):
        kind = s.get("addressType")
        port = next(
            (
                p.get("port")
                for p in s.get("ports") or []
                if isinstance(p, dict) and p.get("name") == "https" and isinstance(p.get("port"), int)
            ),
            None,
        )
        if kind not in ("IPv4", "IPv6") or not isinstance(port, int) or not 0 < port < 65536:
            continue
        for endpoint in s.get("endpoints") or []:
            if not isinstance(endpoint, dict):
                continue
            if (endpoint.get("conditions") or {}).get("ready") is False:
                continue
            for address in endpoint.get("addresses") or []:
                if isinstance(address, str) and address:
                    found.setdefault(kind, (port, set()))[1].add(address)
    if not found:
        return None
    kind = max(found, key=lambda k: (len(found[k][1]), k == "IPv4"))
    port, addresses = found[kind]
    return ActivatorTarget(tuple(sorted(addresses)[:MAX_ACTIVATOR_ADDRESSES]), port, kind)


def has_served(conditions: Sequence[Condition] | None) -> bool:
    """The order's WorkloadReady is True (Available, or ScaledToZero after serving): a replica of it
    has been ready, so its workload is known to start. Only then may KEDA take it to zero."""
    workload = find(conditions, r.WORKLOAD_READY)
    return workload is not None and workload.status == "True"


def available(deployment: Obj | None) -> int:
    """The workload's available replicas (``controller.live.workload.available_replicas``); 0 without one."""
    return available_replicas(deployment) if deployment is not None else 0


def _wanted(deployment: Obj) -> int:
    replicas = (deployment.get("spec") or {}).get("replicas")
    return 1 if replicas is None else int(replicas)


def _stopping(pods: Sequence[Obj]) -> int:
    return sum(1 for p in pods if (p.get("metadata") or {}).get("deletionTimestamp"))


def at_zero(deployment: Obj | None) -> bool:
    """The order's Deployment wants no replica (KEDA scaled it to zero)."""
    return deployment is not None and deployment.get("kind") == "Deployment" and _wanted(deployment) == 0


def wants_activator(deployment: Obj | None, *, may_scale_to_zero: bool, single_node: bool) -> bool:
    """Whether the order's Service should point at the activator now: a single-node order of a class
    that scales to zero, with no available replica (at zero, waking, or still starting), or whose
    Deployment KEDA has just set to 0 replicas while its last pod still serves. Writing the slice at
    that decision, not once the pod is gone, leaves no moment without an endpoint: meanwhile the
    activator forwards what it gets to the ready pod at once."""
    return may_scale_to_zero and single_node and (available(deployment) == 0 or at_zero(deployment))


def zero_verdict(
    deployment: Obj | None,
    pods: Sequence[Obj],
    plain: Verdict,
    *,
    idle_after: int | None,
    has_served: bool,
) -> Verdict | None:
    """``WorkloadReady=True/ScaledToZero`` when the order is at zero or waking (module docstring),
    else None (``plain``, the verdict of any order, stands). ``idle_after``: the class's
    ``scaleToZeroAfterSeconds`` (None: the class never scales to zero); ``has_served``: the order's
    WorkloadReady was True before this look."""
    if idle_after is None or not has_served or deployment is None or deployment.get("kind") != "Deployment":
        return None
    if available(deployment) >= 1:
        return None
    stopping = _stopping(pods)
    if at_zero(deployment):
        tail = f" ({stopping} pod(s) still stopping)" if stopping else ""
        return true(
            r.SCALED_TO_ZERO,
            f"{AT_ZERO}{tail}: the order had no request for {idle_after}s (scaleToZeroAfterSeconds) and holds "
            "no device. A request with its token wakes it; the activator holds the request until a replica "
            "is ready.",
        )
    if plain.reason != r.PROGRESSING:
        return None  # a replica that cannot start is reported as it is
    return true(
        r.SCALED_TO_ZERO,
        f"{WAKING}: {_wanted(deployment)} replica(s) starting; the activator holds requests with the "
        "order's token until one is ready.",
    )
