"""Pure readings for the scale benchmark: an order's state, device over-commit from the claims the
scheduler allocated, sums over Prometheus text, and a process's RSS and CPU from ``/proc``."""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from shared import reasons as r
from shared.quantity import parse_quantity

Obj = Mapping[str, Any]
DeviceKey = tuple[str, str, str]  # driver, pool, device


class State(Enum):
    WAITING = "waiting"  # not decided yet
    NO_CAPACITY = "no_capacity"  # Planned=False, a capacity reason: the order waits for room
    REFUSED = "refused"  # Planned=False for any other reason
    PLANNED = "planned"  # Planned=True
    READY = "ready"  # Planned=True and phase Ready


WAITING_REASONS = frozenset({r.NO_CAPACITY, r.RESOURCE_CLAIM_EXHAUSTED})


def condition(obj: Obj, type_: str) -> Obj | None:
    for c in (obj.get("status") or {}).get("conditions") or []:
        if c.get("type") == type_:
            return dict(c)
    return None


def state(obj: Obj) -> State:
    """Where an order stands, judged only on a status written for its current generation."""
    status = obj.get("status") or {}
    if status.get("observedGeneration") != (obj.get("metadata") or {}).get("generation"):
        return State.WAITING
    planned = condition(obj, r.PLANNED)
    if planned is None or planned.get("status") == "Unknown":
        return State.WAITING
    if planned.get("status") == "True":
        return State.READY if status.get("phase") == "Ready" else State.PLANNED
    return State.NO_CAPACITY if planned.get("reason") in WAITING_REASONS else State.REFUSED


def decided(s: State) -> bool:
    return s is not State.WAITING


@dataclass(frozen=True)
class Overcommit:
    whole: int  # devices (not shareable) allocated to two claims or more
    shared: int  # shareable devices whose claims ask more memory than the device has

    @property
    def total(self) -> int:
        return self.whole + self.shared


def devices(slices: Iterable[Obj]) -> dict[DeviceKey, Obj]:
    out: dict[DeviceKey, Obj] = {}
    for s in slices:
        spec = s.get("spec") or {}
        for d in spec.get("devices") or []:
            out[(str(spec.get("driver")), str((spec.get("pool") or {}).get("name")), str(d["name"]))] = d
    return out


def overcommit(claims: Iterable[Obj], fleet: Mapping[DeviceKey, Obj]) -> Overcommit:
    """Devices the scheduler gave out twice (or, shareable ones, beyond their memory)."""
    whole: dict[DeviceKey, int] = {}
    memory: dict[DeviceKey, float] = {}
    for c in claims:
        allocation = (c.get("status") or {}).get("allocation") or {}
        for res in (allocation.get("devices") or {}).get("results") or []:
            key = (str(res.get("driver")), str(res.get("pool")), str(res.get("device")))
            device = fleet.get(key) or {}
            asked = (res.get("consumedCapacity") or {}).get("memory")
            if device.get("allowMultipleAllocations") and asked is not None:
                memory[key] = memory.get(key, 0.0) + float(parse_quantity(asked))
            else:
                whole[key] = whole.get(key, 0) + 1
    over_shared = 0
    for key, used in memory.items():
        cap = ((fleet[key].get("capacity") or {}).get("memory") or {}).get("value", "0")
        if used > float(parse_quantity(cap)) or whole.get(key):
            over_shared += 1
    return Overcommit(whole=sum(1 for n in whole.values() if n > 1), shared=over_shared)


def metric_sum(text: str, name: str, labels: Mapping[str, str] | None = None) -> float:
    """The sum of the samples of ``name`` whose labels include ``labels`` (counters: ``_total``)."""
    want = labels or {}
    total = 0.0
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in want.items()):
                total += sample.value
    return total


WRITES = "inference_controller_api_writes_total"


@dataclass(frozen=True)
class Writes:
    """The controller's write requests (``WRITES``: every one, counted in ``controller.kube.client``)."""

    objects: int  # every write but Events: workload, status, Secrets, the model-facts ConfigMap, ...
    events: int  # Event POSTs (kind=Event)
    configmaps: int  # of ``objects``, the model-facts ConfigMap's (kind=ConfigMap)

    def __sub__(self, other: Writes) -> Writes:
        return Writes(
            self.objects - other.objects, self.events - other.events, self.configmaps - other.configmaps
        )


def writes(text: str) -> Writes:
    """The write counts in a /metrics page."""
    events = int(metric_sum(text, WRITES, {"kind": "Event"}))
    return Writes(
        int(metric_sum(text, WRITES)) - events, events, int(metric_sum(text, WRITES, {"kind": "ConfigMap"}))
    )


@dataclass(frozen=True)
class ProcStat:
    rss_mb: float
    cpu_seconds: float  # user + system


def proc_stat(pid: int, *, proc: str = "/proc") -> ProcStat:
    with open(f"{proc}/{pid}/status") as f:
        rss_kb = next((int(line.split()[1]) for line in f if line.startswith("VmRSS:")), 0)
    with open(f"{proc}/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    # fields[0] is the state (field 3 of stat); utime and stime are fields 14 and 15.
    cpu = (int(fields[11]) + int(fields[12])) / ticks
    return ProcStat(rss_mb=rss_kb / 1024, cpu_seconds=cpu)


def percentile(values: list[float], p: float) -> float:
    if not values:
        return math.nan
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(p * len(ordered)) - 1))]
