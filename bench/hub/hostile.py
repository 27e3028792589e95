"""Hostile-repository benchmark: the controller's Hub side against the mirror's hostile repositories.

    .venv/bin/python -m bench.hub.hostile [--seconds 300] [--copies 3] [--events 2]

Runs the HF mirror stand-in with ``--hostile`` as a separate process (so its memory is not counted),
and in this process one ``HubClient`` (as the controller builds it) served by 4 worker threads, as the
controller's queue serves orders. The orders: ``--copies`` orders of each hostile repository
(``standins.hub_mirror.hostile``) and of each real model of the mirror. Each order is reconciled as
the controller would: resolved (``fetch_facts``), then, once resolved, looked up by its commit
(``fetch_facts_pinned``, as a steady order with a record). A refused order (ModelNotReady) is
reconciled again every ``--events`` seconds, as if events kept arriving for it (the controller itself
does not requeue it); an unavailable one after the wait the client gives (``retry_after``).

Prints: the peak RSS of this process, the time each real model took to resolve, how often each
hostile repository was asked (requests the mirror served for it) and the first words of its
refusal, and whether every worker stayed free (the longest single reconcile).
"""

from __future__ import annotations

import argparse
import heapq
import json
import resource
import subprocess
import sys
import threading
import time
import urllib.request
from collections import Counter
from dataclasses import dataclass, field

from controller.modelhub.cache import InMemoryFactsStore
from controller.modelhub.client import (
    HubClient,
    ModelAccessDenied,
    ModelNotFound,
    ModelNotReady,
    ModelSourceUnavailable,
)
from standins.hub_mirror import DEFAULT_TOKEN
from standins.hub_mirror.hostile import NAMES
from standins.hub_mirror.repos import load_repos

WORKERS = 4


@dataclass
class Order:
    name: str
    repo: str
    token: str | None
    sha: str | None = None  # the record, once resolved
    outcome: str = ""
    message: str = ""
    resolved_after: float | None = None
    reconciles: int = 0


@dataclass
class Queue:
    """Orders by due time; one worker holds an order at a time."""

    heap: list[tuple[float, int, Order]] = field(default_factory=list)
    lock: threading.Condition = field(default_factory=threading.Condition)
    seq: int = 0

    def add(self, order: Order, due: float) -> None:
        with self.lock:
            self.seq += 1
            heapq.heappush(self.heap, (due, self.seq, order))
            self.lock.notify()

    def take(self, stop: float) -> Order | None:
        with self.lock:
            while True:
                now = time.monotonic()
                if now >= stop:
                    return None
                if self.heap and self.heap[0][0] <= now:
                    return heapq.heappop(self.heap)[2]
                wait = (self.heap[0][0] - now) if self.heap else 0.5
                self.lock.wait(timeout=min(wait, stop - now, 0.5))


def reconcile(client: HubClient, order: Order, began: float, events: float) -> float:
    """One reconcile of ``order``; the seconds until it is looked at again."""
    order.reconciles += 1
    try:
        if order.sha is not None:
            client.fetch_facts_pinned(repo_id=order.repo, sha=order.sha, token=order.token)
            return 30.0
        facts = client.fetch_facts(repo_id=order.repo, revision=None, token=order.token)
    except ModelNotReady as e:
        order.outcome, order.message = "ModelNotReady", str(e)
        return events
    except ModelSourceUnavailable as e:
        order.outcome, order.message = "ModelSourceUnavailable", str(e)
        return e.retry_after or 10.0
    except (ModelNotFound, ModelAccessDenied) as e:
        order.outcome, order.message = type(e).__name__, str(e)
        return 60.0
    order.sha, order.outcome = facts.revision, "Resolved"
    order.resolved_after = time.monotonic() - began
    return 30.0


def start_mirror_process() -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "standins.hub_mirror", "--hostile", "--port", "0"],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline().strip()
    return proc, line.rsplit(" ", 1)[-1]


def mirror_requests(url: str) -> list[dict[str, object]]:
    with urllib.request.urlopen(f"{url}/_mirror/requests", timeout=30) as r:
        items: list[dict[str, object]] = json.load(r)["requests"]
        return items


def repo_of(path: str) -> str:
    """The repository a mirror request was for."""
    path = path.removeprefix("/api/models/").strip("/")
    for mark in ("/resolve/", "/revision/", "/tree/"):
        path = path.split(mark, 1)[0]
    return path


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=300.0)
    parser.add_argument("--copies", type=int, default=3)
    parser.add_argument(
        "--events", type=float, default=2.0, help="seconds between reconciles of a refused order"
    )
    args = parser.parse_args()
    real = load_repos()
    hostile = sorted(NAMES)
    proc, url = start_mirror_process()
    try:
        print(f"mirror {url}; RSS before: {rss_mb():.0f} MB", flush=True)
        client = HubClient(endpoint=url, store=InMemoryFactsStore())
        queue = Queue()
        orders = [
            Order(f"{repo}#{i}", repo, DEFAULT_TOKEN if repo in real and real[repo].gated else None)
            for repo in [*hostile, *sorted(real)]
            for i in range(args.copies)
        ]
        began = time.monotonic()
        stop = began + args.seconds
        for order in orders:
            queue.add(order, began)
        longest: list[float] = [0.0]

        def work() -> None:
            while (order := queue.take(stop)) is not None:
                t = time.monotonic()
                again = reconcile(client, order, began, args.events)
                longest[0] = max(longest[0], time.monotonic() - t)
                queue.add(order, time.monotonic() + again)

        threads = [threading.Thread(target=work, daemon=True) for _ in range(WORKERS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        asked = Counter(repo_of(str(r["path"])) for r in mirror_requests(url))
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    print(f"ran {args.seconds:.0f} s, {len(orders)} orders, {WORKERS} workers; peak RSS {rss_mb():.0f} MB")
    print(f"longest single reconcile: {longest[0]:.2f} s")
    print(f"{'real model':45} {'outcome':10} {'resolved after':>14}")
    for order in orders:
        if order.repo in real and order.name.endswith("#0"):
            after = f"{order.resolved_after:.2f} s" if order.resolved_after is not None else "-"
            print(f"{order.repo:45} {order.outcome[:10]:10} {after:>14}")
    print(f"{'hostile repository':35} {'asked':>5} {'reconciles':>10}  refusal")
    for repo in hostile:
        mine = [o for o in orders if o.repo == repo]
        asked_n = asked[repo]
        message = mine[0].message.replace(f" of repository `{repo}`", "")
        if message.startswith("Repository"):
            message = message.split(" is refused: ", 1)[-1]
        print(
            f"{repo:35} {asked_n:>5} {sum(o.reconciles for o in mine):>10}  {mine[0].outcome}: {message[:110]}"
        )


if __name__ == "__main__":
    main()
