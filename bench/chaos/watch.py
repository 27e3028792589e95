"""What is sampled while a churn runs, every ``period`` seconds, from the API server:

- the token of every ``<order>-auth`` Secret, by order uid (a second value is a rotation);
- the Deployments of every order (two at once is a duplicated workload);
- during the Hub outage, every order that was Ready when it began and has not been edited or
  deleted since: it must be Ready at every sample.

A sample the API server cannot answer (it is restarting) is skipped.
"""

from __future__ import annotations

import base64
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kubernetes import client as k8s

from bench.chaos.kube import items
from shared.names import LABEL_ORDER

Obj = dict[str, Any]


def list_orders(api: k8s.ApiClient, namespace: str) -> list[Obj]:
    return items(api, "InferenceService", namespace)


def owner_uid(obj: Obj) -> str | None:
    for ref in obj["metadata"].get("ownerReferences") or []:
        if ref.get("kind") == "InferenceService":
            return str(ref["uid"])
    return None


@dataclass
class Watch:
    api: k8s.ApiClient
    namespaces: list[str]
    hub_active: Callable[[], bool] = lambda: False
    period: float = 2.0
    tokens: dict[tuple[str, str, str], set[str]] = field(default_factory=dict)  # (ns, order, uid)
    duplicates: dict[tuple[str, str], set[str]] = field(default_factory=dict)
    hub_ready: dict[tuple[str, str], tuple[str, int]] = field(default_factory=dict)  # at outage start
    hub_lost: list[str] = field(default_factory=list)
    hub_samples: int = 0
    samples: int = 0
    skipped: int = 0

    def run(self, stop: threading.Event) -> None:
        while not stop.wait(self.period):
            try:
                self.sample()
            except Exception:
                self.skipped += 1

    def sample(self) -> None:
        hub = self.hub_active()
        for ns in self.namespaces:
            for s in items(self.api, "Secret", ns, selector=LABEL_ORDER):
                order = s["metadata"]["labels"].get(LABEL_ORDER, "")
                token = (s.get("data") or {}).get("token")
                if s["metadata"]["name"] != f"{order}-auth" or not token:
                    continue
                key = (ns, order, owner_uid(s) or "-")
                self.tokens.setdefault(key, set()).add(base64.b64decode(token).decode())
            per: dict[str, list[str]] = {}
            for d in items(self.api, "Deployment", ns, selector=LABEL_ORDER):
                if not d["metadata"].get("deletionTimestamp"):
                    per.setdefault(d["metadata"]["labels"][LABEL_ORDER], []).append(d["metadata"]["name"])
            for order, names in per.items():
                if len(names) > 1:
                    self.duplicates.setdefault((ns, order), set()).update(names)
            if hub:
                self._hub(ns, list_orders(self.api, ns))
        self.samples += 1
        if hub:
            self.hub_samples += 1

    def _hub(self, ns: str, orders: list[Obj]) -> None:
        first = self.hub_samples == 0
        for o in orders:
            key = (ns, o["metadata"]["name"])
            ident = (o["metadata"]["uid"], int(o["metadata"]["generation"]))
            phase = (o.get("status") or {}).get("phase")
            if first:
                if phase == "Ready" and (o.get("status") or {}).get("observedGeneration") == ident[1]:
                    self.hub_ready[key] = ident
            elif self.hub_ready.get(key) == ident and phase != "Ready":
                reason = next(
                    (c.get("reason") for c in o["status"].get("conditions") or [] if c["type"] == "Ready"),
                    None,
                )
                self.hub_lost.append(f"{ns}/{key[1]}: {phase} ({reason})")

    def rotations(self) -> dict[str, int]:
        return {f"{ns}/{o} uid {uid[:8]}": len(v) for (ns, o, uid), v in self.tokens.items() if len(v) > 1}
