"""Intents: what one decision asks the act step to do. Pure data; ``controller.act`` carries it out.

- ``verdicts`` and ``fields`` become the status (``status.build_status``), written only if changed;
- ``apply``: objects to server-side apply (only those not yet applied exactly, or drifted);
- ``delete``: owned objects the plan no longer wants;
- ``events``: (type, reason, message) Events on the order besides condition transitions;
- ``probe``: a probe of the endpoint is due (the probe book runs it off the workers);
- ``scrape``: the fetcher whose download progress is watched, and whether a scrape is due (the
  progress book runs it); none while no fetcher runs, and then the order's record is dropped;
- ``mint_token``: the ``<order>-auth`` Secret does not exist yet and must be created once;
- ``plan``: the plan in force after this reconcile; ``waiting``: requeue on capacity growth;
- ``evict``: pods of lower-priority orders to evict through the Eviction API (honours
  PodDisruptionBudgets), whose devices this order's plan counts on (controller-driven preemption).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from controller.conditions.status import StatusFields
from controller.planner import LaunchPlan
from shared.conditions import Verdict


@dataclass(frozen=True, slots=True)
class Delete:
    api_version: str
    kind: str
    name: str


@dataclass(frozen=True, slots=True)
class Evict:
    """Evict ``pod`` (of the order ``victim``, priority ``victim_priority``) in ``namespace``:
    its claim holds a device the plan of an order of higher priority counts on."""

    namespace: str
    pod: str
    victim: str  # the victim order's name (same namespace as its claim)
    victim_priority: int
    reason: str


@dataclass(frozen=True, slots=True)
class ProbeRequest:
    url: str
    token: str | None


@dataclass(frozen=True, slots=True)
class ScrapeRequest:
    """The fetcher being watched; ``due``: scrape it now."""

    pod: str
    address: str  # host:port of the fetcher's metric
    due: bool = True


@dataclass(frozen=True, slots=True)
class Intents:
    verdicts: Mapping[str, Verdict]
    fields: StatusFields
    apply: tuple[dict[str, Any], ...] = ()
    delete: tuple[Delete, ...] = ()
    events: tuple[tuple[str, str, str], ...] = ()
    advisory: frozenset[str] = frozenset()
    requeue: float | None = None
    probe: ProbeRequest | None = None
    scrape: ScrapeRequest | None = None
    mint_token: bool = False
    plan: LaunchPlan | None = None
    waiting: bool = False
    evict: tuple[Evict, ...] = ()
