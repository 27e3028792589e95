"""The fuzz run: generated objects created (and some updated) through the API server, judged.

Objects are sent by ``workers`` threads. Every ``batch`` cases, every stored object is listed,
judged again as stored, and deleted, so the controller never holds more than a batch.
"""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from bench.fuzz.gen import PLURALS, Case, Generator
from bench.fuzz.judge import contract_refusals, outcome_of
from controller.kube.client import request
from controller.kube.errors import NotFound
from shared.api.base import API_GROUP, API_VERSION

BASE = f"/apis/{API_GROUP}/{API_VERSION}"


def collection(kind: str, namespace: str | None) -> str:
    scope = f"/namespaces/{namespace}" if namespace else ""
    return f"{BASE}{scope}/{PLURALS[kind]}"


@dataclass
class Tally:
    outcomes: Counter[str] = field(default_factory=Counter)
    by_kind: Counter[tuple[str, str]] = field(default_factory=Counter)
    updates: Counter[str] = field(default_factory=Counter)
    stored_but_refused: list[str] = field(default_factory=list)
    valid_refused: list[str] = field(default_factory=list)
    examples: dict[str, list[str]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, case: Case, outcome: str, detail: str, *, update: bool) -> None:
        with self.lock:
            (self.updates if update else self.outcomes)[outcome] += 1
            self.by_kind[(case.kind, outcome)] += 1
            if case.valid and outcome != "accepted" and len(self.valid_refused) < 20:
                self.valid_refused.append(f"{case.kind} {case.obj['metadata']['name']}: {detail[:300]}")
            shown = self.examples.setdefault(outcome, [])
            if len(shown) < 3:
                shown.append(f"{case.kind} {case.mutations}: {detail[:300]}")


@dataclass
class Fuzz:
    api: Any
    generator: Generator
    tally: Tally = field(default_factory=Tally)
    update_share: float = 0.15
    accepted: dict[str, list[tuple[str | None, str]]] = field(default_factory=dict)  # kind -> (ns, name)

    def one(self, i: int, case: Case, rng: random.Random) -> None:
        ns = case.obj["metadata"].get("namespace")
        targets = self.accepted.get(case.kind) or []
        update = bool(targets) and rng.random() < self.update_share
        try:
            if update:
                ns, name = rng.choice(targets)
                live = request(self.api, "GET", f"{collection(case.kind, ns)}/{name}", timeout=30)
                live["spec"] = case.obj.get("spec")
                if live["spec"] is None:
                    live.pop("spec")
                stored = request(
                    self.api, "PUT", f"{collection(case.kind, ns)}/{name}", body=live, timeout=30
                )
            else:
                stored = request(self.api, "POST", collection(case.kind, ns), body=case.obj, timeout=30)
        except NotFound as e:
            if update:  # the batch cleanup took it
                self.tally.add(case, "other", str(e), update=True)
                return
            self.tally.add(case, outcome_of(e), str(e), update=update)
            return
        except Exception as e:
            self.tally.add(case, outcome_of(e), str(e), update=update)
            return
        self.tally.add(case, "accepted", "", update=update)
        self.judge(case.kind, stored, when="answer")
        if not update:
            with self.tally.lock:
                self.accepted.setdefault(case.kind, []).append((ns, stored["metadata"]["name"]))

    def judge(self, kind: str, stored: dict[str, Any], *, when: str) -> None:
        refusals = contract_refusals(kind, stored)
        if refusals:
            with self.tally.lock:
                self.tally.stored_but_refused.append(
                    f"{kind} {stored['metadata']['name']} ({when}): {refusals[:3]} spec={stored.get('spec')}"
                )

    def sweep(self, namespaces: list[str], label: str) -> int:
        """Judge every stored object of the run again, then delete them all. The count judged."""
        judged = 0
        for kind in PLURALS:
            scopes: list[str | None] = list(namespaces) if kind == "InferenceService" else [None]
            for ns in scopes:
                items = request(
                    self.api, "GET", collection(kind, ns), query={"labelSelector": label}, timeout=60
                )["items"]
                for obj in items:
                    self.judge(kind, obj, when="listed")
                    judged += 1
                request(self.api, "DELETE", collection(kind, ns), query={"labelSelector": label}, timeout=120)
        self.accepted.clear()
        return judged

    def run(
        self, count: int, *, namespaces: list[str], label: str, batch: int, workers: int
    ) -> dict[str, Any]:
        t0 = time.monotonic()
        rng = random.Random(self.generator.seed + 1)
        judged = 0
        with ThreadPoolExecutor(max_workers=workers) as pool:
            for start in range(0, count, batch):
                cases = [(i, self.generator.case(i)) for i in range(start, min(count, start + batch))]
                seeds = [rng.random() for _ in cases]
                list(
                    pool.map(
                        lambda a: self.one(a[0][0], a[0][1], random.Random(a[1])),
                        zip(cases, seeds, strict=True),
                    )
                )
                judged += self.sweep(namespaces, label)
        elapsed = time.monotonic() - t0
        return {
            "seconds": round(elapsed, 1),
            "per_second": round(count / elapsed, 1),
            "stored_judged_again": judged,
        }
