"""The end of a run: wait until the orders settle, then read what the invariants are about.

- ``settle``: every order's status computed for its generation and unchanged for ``quiet`` seconds;
- ``statuses``: phase and the reason of each condition, per order (``<ns index>/<name>``);
- ``orphans``: objects labelled with an order whose owner is not a live order (after the garbage
  collector had ``gc_seconds`` to delete them);
- ``workloads``: orders with more than one Deployment, or more running pods than replicas;
- ``stored_while_down``: orders whose creationTimestamp falls inside a window the webhook was down.
"""

from __future__ import annotations

import datetime as dt
import json
import time
from typing import Any

from kubernetes import client as k8s

from bench.chaos.kube import OWNED, items
from bench.chaos.watch import list_orders
from shared.names import LABEL_ORDER

Obj = dict[str, Any]
Status = dict[str, Any]


def _status_of(o: Obj) -> Status:
    st = o.get("status") or {}
    return {
        "phase": st.get("phase"),
        "reasons": {c["type"]: f"{c['status']}/{c.get('reason')}" for c in st.get("conditions") or []},
        "model": o["spec"]["model"]["ref"]["name"],
    }


def statuses(api: k8s.ApiClient, namespaces: list[str]) -> dict[str, Status]:
    out = {}
    for i, ns in enumerate(namespaces):
        for o in list_orders(api, ns):
            out[f"{i}/{o['metadata']['name']}"] = _status_of(o)
    return out


def settle(api: k8s.ApiClient, namespaces: list[str], *, timeout: float = 240, quiet: float = 12) -> float:
    """Seconds it took until every order reports its generation and nothing changed for ``quiet``."""
    t0 = time.monotonic()
    last: str | None = None
    since = t0
    while time.monotonic() - t0 < timeout:
        try:
            orders = [o for ns in namespaces for o in list_orders(api, ns)]
        except Exception:
            time.sleep(1)
            continue
        current = all(
            (o.get("status") or {}).get("observedGeneration") == o["metadata"]["generation"]
            and (o.get("status") or {}).get("phase")
            for o in orders
        )
        snap = json.dumps(sorted((o["metadata"]["uid"], _status_of(o)) for o in orders), sort_keys=True)
        if snap != last or not current:
            last, since = snap, time.monotonic()
        elif time.monotonic() - since >= quiet:
            return time.monotonic() - t0
        time.sleep(2)
    return -1.0


def orphans(api: k8s.ApiClient, namespaces: list[str], *, gc_seconds: float = 60) -> list[str]:
    """Owned objects without a live order as owner, once the garbage collector had its time."""
    deadline = time.monotonic() + gc_seconds
    while True:
        found = []
        for ns in namespaces:
            live = {o["metadata"]["uid"] for o in list_orders(api, ns)}
            for kind, obj in ((k, o) for k in OWNED for o in items(api, k, ns, selector=LABEL_ORDER)):
                meta = obj["metadata"]
                owners = {
                    r["uid"] for r in meta.get("ownerReferences") or [] if r["kind"] == "InferenceService"
                }
                if not meta.get("deletionTimestamp") and not owners & live:
                    found.append(f"{kind} {ns}/{meta['name']}")
        if not found or time.monotonic() > deadline:
            return found
        time.sleep(3)


def stale_volumes(api: k8s.ApiClient, namespaces: list[str]) -> list[str]:
    """Model volumes of a live order that its Deployment no longer mounts (pruned after an edit)."""
    out = []
    for ns in namespaces:
        mounted: dict[str, set[str]] = {}
        for d in items(api, "Deployment", ns, selector=LABEL_ORDER):
            volumes = d["spec"]["template"]["spec"].get("volumes") or []
            claims = {
                v["persistentVolumeClaim"]["claimName"] for v in volumes if v.get("persistentVolumeClaim")
            }
            mounted.setdefault(d["metadata"]["labels"][LABEL_ORDER], set()).update(claims)
        for pvc in items(api, "PersistentVolumeClaim", ns, selector=LABEL_ORDER):
            order, name = pvc["metadata"]["labels"][LABEL_ORDER], pvc["metadata"]["name"]
            if (
                order in mounted
                and name not in mounted[order]
                and not pvc["metadata"].get("deletionTimestamp")
            ):
                out.append(f"{ns}/{name} (order {order})")
    return out


def workloads(api: k8s.ApiClient, namespaces: list[str]) -> list[str]:
    """Orders with more than one live Deployment, or more running pods than their Deployment wants."""
    out = []
    for ns in namespaces:
        deployments: dict[str, list[Obj]] = {}
        for d in items(api, "Deployment", ns, selector=LABEL_ORDER):
            if not d["metadata"].get("deletionTimestamp"):
                deployments.setdefault(d["metadata"]["labels"][LABEL_ORDER], []).append(d)
        pods: dict[str, int] = {}
        for p in items(api, "Pod", ns, selector=LABEL_ORDER):
            if not p["metadata"].get("deletionTimestamp") and p.get("status", {}).get("phase") in (
                "Pending",
                "Running",
            ):
                order = p["metadata"]["labels"][LABEL_ORDER]
                pods[order] = pods.get(order, 0) + 1
        for order, ds in deployments.items():
            if len(ds) > 1:
                out.append(f"{ns}/{order}: {len(ds)} Deployments")
            wanted = sum(int(d["spec"].get("replicas") or 0) for d in ds)
            if pods.get(order, 0) > wanted:
                out.append(f"{ns}/{order}: {pods[order]} pods for {wanted} replicas")
    return out


def stored_while_down(
    api: k8s.ApiClient, namespaces: list[str], windows: list[tuple[float, float]]
) -> list[str]:
    """Orders created (by the API server's clock, to the second) strictly inside a webhook outage."""
    out = []
    for ns in namespaces:
        for o in list_orders(api, ns):
            created = dt.datetime.fromisoformat(o["metadata"]["creationTimestamp"].replace("Z", "+00:00"))
            t = created.timestamp()
            if any(start + 1 < t < end - 1 for start, end in windows):
                out.append(f"{ns}/{o['metadata']['name']} created {o['metadata']['creationTimestamp']}")
    return out


def differences(a: dict[str, Status], b: dict[str, Status]) -> list[str]:
    """What differs between two runs' final statuses, order by order."""
    out = []
    for key in sorted(set(a) | set(b)):
        if key not in a or key not in b:
            out.append(f"{key}: only in the {'faulted' if key in b else 'clean'} run")
        elif a[key] != b[key]:
            out.append(f"{key}: clean {a[key]} != faulted {b[key]}")
    return out
