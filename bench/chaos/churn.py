"""The churn: a seeded plan of order operations (create, edit the model, delete) and its executor.

``plan`` is pure: the same seed gives the same operations, so a run with faults and one without can
be compared order by order. ``Executor`` performs them at their offsets, one after another, and
retries each until the plane takes it: a refused write (the webhook down: failurePolicy Fail), an
API server that does not answer, a conflict. Every attempt is recorded with its outcome.
"""

from __future__ import annotations

import contextlib
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from controller.kube.client import request
from controller.kube.errors import AlreadyExists, ApiUnavailable, Conflict, KubeError, NotFound
from shared.api.base import API_GROUP, API_VERSION

Verb = Literal["create", "edit", "delete"]
PLURAL = "inferenceservices"
CLASS = "default-llm"
# Small models of the mirror that default-llm serves, and two it refuses (to compare failure reasons).
SERVED = (
    "Qwen/Qwen2.5-0.5B-Instruct",
    "sentence-transformers/all-MiniLM-L6-v2",
    "BAAI/bge-large-en-v1.5",
    "BAAI/bge-reranker-v2-m3",
    "microsoft/Phi-3-mini-4k-instruct",
)
REFUSED = ("bartowski/Meta-Llama-3.1-8B-Instruct-GGUF", "chaos-missing/not-on-the-hub")


@dataclass(frozen=True)
class Op:
    at: float  # seconds from the start of the churn
    verb: Verb
    ns: int  # index of the run's namespace
    name: str
    model: str | None = None  # create, edit

    @property
    def key(self) -> str:
        return f"{self.ns}/{self.name}"


def plan(
    seed: int, seconds: float, *, namespaces: int = 3, creates: int = 30, max_live: int = 12
) -> list[Op]:
    """The operations of one churn: ``creates`` orders over ``namespaces``, at most ``max_live`` at
    once (the fleet's capacity is not the subject), edits and deletes between, spread over the first
    three quarters of ``seconds``. A deleted name is sometimes created again (a new uid)."""
    rng = random.Random(seed)
    live: dict[str, tuple[int, str]] = {}
    gone: list[tuple[int, str]] = []
    steps: list[tuple[Verb, int, str, str | None]] = []
    made = 0
    serial = 0
    models = SERVED * 3 + REFUSED  # mostly served
    while made < creates:
        r = rng.random()
        if (r < 0.5 or len(live) < 3) and len(live) < max_live:
            if gone and rng.random() < 0.25:
                ns, name = gone.pop(rng.randrange(len(gone)))
            else:
                ns, name = rng.randrange(namespaces), f"o{serial:02d}"
                serial += 1
            model = rng.choice(models)
            live[f"{ns}/{name}"] = (ns, name)
            steps.append(("create", ns, name, model))
            made += 1
        elif r < 0.72 and live:
            ns, name = live[rng.choice(sorted(live))]
            steps.append(("edit", ns, name, rng.choice(models)))
        elif live:
            key = rng.choice(sorted(live))
            ns, name = live.pop(key)
            gone.append((ns, name))
            steps.append(("delete", ns, name, None))
    span = 0.75 * seconds
    return [Op(span * i / len(steps), v, ns, n, m) for i, (v, ns, n, m) in enumerate(steps)]


def expected(ops: list[Op]) -> dict[str, str]:
    """The orders the plan leaves, with their models: ``{"<ns index>/<name>": model}``."""
    out: dict[str, str] = {}
    for op in ops:
        if op.verb == "delete":
            out.pop(op.key, None)
        elif op.model is not None:
            out[op.key] = op.model
    return out


def order(namespace: str, name: str, model: str) -> dict[str, Any]:
    return {
        "apiVersion": f"{API_GROUP}/{API_VERSION}",
        "kind": "InferenceService",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"inferenceServiceClassName": CLASS, "model": hf(model)},
    }


def hf(model: str) -> dict[str, Any]:
    return {"src": "HuggingFace", "ref": {"name": model}}


@dataclass(frozen=True)
class Attempt:
    at: float  # wall clock
    verb: Verb
    key: str
    outcome: str  # ok | refused_by_webhook | unavailable | conflict | error
    detail: str = ""


def classify(error: Exception) -> str:
    """What a failed write says about the plane."""
    message = str(error)
    if "failed calling webhook" in message or "admission webhook" in message:
        return "refused_by_webhook"
    if isinstance(error, Conflict | AlreadyExists):
        return "conflict"
    if isinstance(error, ApiUnavailable) or not isinstance(error, KubeError):
        return "unavailable"  # no answer, 5xx, 429: the API server or etcd restarting
    if error.status >= 500:
        return "unavailable"
    return "error"


@dataclass
class Executor:
    """Performs a plan against the namespaces ``namespaces[i]``; ``attempts`` records every try."""

    api: Any  # kubernetes.client.ApiClient
    namespaces: list[str]
    ops: list[Op]
    attempts: list[Attempt] = field(default_factory=list)
    done: list[Op] = field(default_factory=list)
    give_up_seconds: float = 180.0
    steady_seconds: float = 60.0
    waited: float = 0.0  # seconds edits waited for their order to be steady
    clock: Callable[[], float] = time.time

    def run(self, start: float, stop: threading.Event) -> None:
        for op in self.ops:
            delay = start + op.at - self.clock()
            if delay > 0 and stop.wait(delay):
                return
            if op.verb == "edit":
                self.waited += self._steady(op, stop)
            deadline = self.clock() + self.give_up_seconds
            while not stop.is_set():
                outcome, detail = self._try(op)
                self.attempts.append(Attempt(self.clock(), op.verb, op.key, outcome, detail[:300]))
                if outcome == "ok":
                    self.done.append(op)
                    break
                if outcome == "error" or self.clock() > deadline:
                    break
                stop.wait(1.0)

    def _steady(self, op: Op, stop: threading.Event) -> float:
        """Wait (at most ``steady_seconds``) until the order is judged for its generation and Ready
        or Failed, so that an edit lands on the same state in every run, however slow the plane
        was to plan the previous generation. The seconds waited."""
        t0 = self.clock()
        path = f"/apis/{API_GROUP}/{API_VERSION}/namespaces/{self.namespaces[op.ns]}/{PLURAL}/{op.name}"
        while self.clock() - t0 < self.steady_seconds and not stop.is_set():
            try:
                o = request(self.api, "GET", path, timeout=15)
                st = o.get("status") or {}
                if st.get("observedGeneration") == o["metadata"]["generation"] and st.get("phase") in (
                    "Ready",
                    "Failed",
                ):
                    break
            except Exception:
                pass
            stop.wait(1.0)
        return self.clock() - t0

    def _try(self, op: Op) -> tuple[str, str]:
        ns = self.namespaces[op.ns]
        base = f"/apis/{API_GROUP}/{API_VERSION}/namespaces/{ns}/{PLURAL}"
        try:
            if op.verb == "create":
                assert op.model is not None
                try:
                    request(self.api, "POST", base, body=order(ns, op.name, op.model), timeout=15)
                except AlreadyExists:
                    # A create whose answer was lost (the API server restarted) is stored already;
                    # one that meets the order it replaces still being deleted must wait.
                    live = request(self.api, "GET", f"{base}/{op.name}", timeout=15)
                    if live["metadata"].get("deletionTimestamp"):
                        return "conflict", "the previous order of this name is being deleted"
            elif op.verb == "edit":
                assert op.model is not None
                live = request(self.api, "GET", f"{base}/{op.name}", timeout=15)
                live["spec"]["model"] = hf(op.model)
                request(self.api, "PUT", f"{base}/{op.name}", body=live, timeout=15)
            else:
                with contextlib.suppress(NotFound):
                    request(self.api, "DELETE", f"{base}/{op.name}", timeout=15)
        except Exception as e:
            return classify(e), f"{type(e).__name__}: {str(e)[:280]}"
        return "ok", ""
