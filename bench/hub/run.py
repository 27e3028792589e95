"""Hub client benchmark: requests and time to resolve the facts of N orders of each mirror model.

    .venv/bin/python -m bench.hub.run [--orders 100]

Runs the HF mirror stand-in on loopback and, for each of its models, resolves ``--orders`` orders
through one ``HubClient`` (one process, cache warm after the first order). Prints per model: the
HTTP requests the mirror saw, the first (cold) resolution time, and the median warm time; then the
same for a cold client after the revision TTL expired (only the revision is resolved again); then
for a restarted client on the same ``FactsStore``: the requests of ``--orders`` pinned orders (by
commit sha, ``fetch_facts_pinned``; 0 expected) and of as many orders of ``main`` (1 expected: the
revision), and the median pinned time.
"""

from __future__ import annotations

import argparse
import statistics
import time

from controller.modelhub.cache import InMemoryFactsStore
from controller.modelhub.client import HubClient
from standins.hub_mirror import DEFAULT_TOKEN, RunningMirror, start_mirror


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--orders", type=int, default=100)
    args = parser.parse_args()
    with start_mirror() as mirror:
        print(
            f"{'model':45} {'requests':>8} {'cold ms':>8} {'warm us':>8} {'after TTL':>9} "
            f"{'pinned':>6} {'main':>4} {'pinned us':>9}"
        )
        for repo_id, repo in sorted(mirror.repos.items()):
            token = DEFAULT_TOKEN if repo.gated else None
            clock = Clock()
            store = InMemoryFactsStore()
            client = HubClient(endpoint=mirror.url, clock=clock, store=store)
            mirror.clear_requests()
            start = time.perf_counter()
            client.fetch_facts(repo_id=repo_id, revision=None, token=token)
            cold = time.perf_counter() - start
            warm = []
            for _ in range(args.orders - 1):
                start = time.perf_counter()
                client.fetch_facts(repo_id=repo_id, revision=None, token=token)
                warm.append(time.perf_counter() - start)
            requests = len(mirror.requests())
            clock.now += 3600
            client.fetch_facts(repo_id=repo_id, revision=None, token=token)
            again = len(mirror.requests()) - requests
            median = statistics.median(warm) * 1e6 if warm else 0.0
            pinned, from_main, pinned_median = restarted(mirror, store, repo_id, repo.sha, token, args.orders)
            print(
                f"{repo_id:45} {requests:>8} {cold * 1e3:>8.1f} {median:>8.1f} {again:>9} "
                f"{pinned:>6} {from_main:>4} {pinned_median:>9.1f}"
            )


def restarted(
    mirror: RunningMirror, store: InMemoryFactsStore, repo_id: str, sha: str, token: str | None, orders: int
) -> tuple[int, int, float]:
    """Requests of ``orders`` pinned orders and of ``orders`` orders of ``main`` for a client made
    after a restart on ``store``, and the median time of a pinned order in microseconds."""
    client = HubClient(endpoint=mirror.url, clock=Clock(), store=store)
    mirror.clear_requests()
    times = []
    for _ in range(orders):
        start = time.perf_counter()
        client.fetch_facts_pinned(repo_id=repo_id, sha=sha, token=token)
        times.append(time.perf_counter() - start)
    pinned = mirror.request_count()
    client = HubClient(endpoint=mirror.url, clock=Clock(), store=store)
    mirror.clear_requests()
    for _ in range(orders):
        client.fetch_facts(repo_id=repo_id, revision="main", token=token)
    return pinned, mirror.request_count(), statistics.median(times) * 1e6


if __name__ == "__main__":
    main()
