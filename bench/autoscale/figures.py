"""The autoscale benchmark's figures, from what was sampled (pure).

A ``Sample`` is one look at the world: the Deployment's wanted and ready replicas, the HPA's desired
replicas, and the queue Prometheus reported (``sum(vllm:num_requests_waiting)`` of the order). The
figures are measured from the load step (``load_at``) and from the end of the load (``quiet_at``):

- ``decision_s``: the first sample whose HPA desired replicas exceed the replicas at the step;
- ``new_replica_ready_s``: the first sample with more ready replicas than at the step;
- ``peak_queue``: the largest queue seen;
- ``direction_changes``: how often the wanted replicas turned from growing to shrinking or back
  (a series 1, 2, 2, 1 has one change; 1, 2, 1, 2, 1 has three);
- ``back_to_min_s``: from the end of the load to the first sample, after it, whose wanted replicas
  are back at ``min_replicas`` (None: never within the run);
- ``shrank_while_loaded``: whether the wanted replicas ever fell while the load ran.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Sample:
    t: float  # time.monotonic()
    wanted: int  # the Deployment's spec.replicas
    ready: int  # ready replicas that a real vLLM process serves (testkit Platform.served_by)
    desired: int | None  # the HPA's status.desiredReplicas (None: no HPA yet)
    queue: float | None  # Prometheus: the order's summed vllm:num_requests_waiting (None: no answer)


def direction_changes(series: Sequence[int]) -> int:
    """How often a series turns between rising and falling; flat stretches do not count."""
    changes, last = 0, 0
    for a, b in itertools.pairwise(series):
        step = (b > a) - (b < a)
        if step and last and step != last:
            changes += 1
        if step:
            last = step
    return changes


def _first(samples: Sequence[Sample], since: float, hit: Callable[[Sample], bool]) -> float | None:
    for s in samples:
        if s.t >= since and hit(s):
            return round(s.t - since, 1)
    return None


def figures(
    samples: Sequence[Sample], *, load_at: float, quiet_at: float, min_replicas: int
) -> dict[str, object]:
    before = [s for s in samples if s.t <= load_at]
    base = before[-1].wanted if before else min_replicas
    loaded = [s for s in samples if load_at <= s.t <= quiet_at]
    queues = [s.queue for s in samples if s.queue is not None]
    return {
        "replicas_at_step": base,
        "decision_s": _first(samples, load_at, lambda s: (s.desired or 0) > base),
        "new_replica_ready_s": _first(samples, load_at, lambda s: s.ready > base),
        "peak_queue": max(queues) if queues else None,
        "peak_ready": max((s.ready for s in samples), default=0),
        "direction_changes": direction_changes([s.wanted for s in samples]),
        "shrank_while_loaded": any(b.wanted < a.wanted for a, b in itertools.pairwise(loaded)),
        "back_to_min_s": _first(samples, quiet_at, lambda s: s.wanted <= min_replicas),
    }
