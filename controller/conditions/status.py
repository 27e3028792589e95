"""The order's status, computed once per reconcile from the chain's verdicts. Pure.

The reconciler writes it through ``/status`` only when ``status_changed`` says so, and records one
Event per condition transition (``transitions``).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass

from shared import reasons as r
from shared.api.order import (
    Constraints,
    Endpoint,
    InferenceService,
    InferenceServiceStatus,
    Resolved,
    ResolvedModel,
)
from shared.conditions import Verdict, chain_conditions, derive_phase, find, set_condition


@dataclass(frozen=True, slots=True)
class StatusFields:
    """Status fields besides conditions; ``None`` leaves the previous value in place."""

    endpoint: Endpoint | None = None
    auth_secret_name: str | None = None
    clear_auth_secret_name: bool = False
    model: ResolvedModel | None = None
    constraints: Constraints | None = None
    resolved: Resolved | None = None


def build_status(
    order: InferenceService,
    verdicts: Mapping[str, Verdict],
    fields: StatusFields,
    *,
    now: str,
    advisory: Collection[str] = (),
) -> InferenceServiceStatus:
    """The whole new status: conditions answered in chain order, phase derived from them.

    ``advisory`` conditions are reported but do not hold the chain: a serving order whose class or
    model source fails keeps its workload conditions judged (see ``controller.decide``).
    """
    old = order.status
    generation = order.metadata.generation
    conditions = list(old.conditions or [])
    for type_, verdict in chain_conditions(verdicts, advisory=advisory).items():
        conditions = set_condition(conditions, type_, verdict, generation=generation, now=now)
    auth = old.auth_secret_name
    if fields.clear_auth_secret_name:
        auth = None
    elif fields.auth_secret_name is not None:
        auth = fields.auth_secret_name
    return InferenceServiceStatus(
        observed_generation=generation,
        phase=derive_phase(conditions),
        conditions=conditions,
        endpoint=fields.endpoint or old.endpoint,
        auth_secret_name=auth,
        model=fields.model or old.model,
        constraints=fields.constraints or old.constraints,
        resolved=fields.resolved or old.resolved,
    )


def status_changed(old: InferenceServiceStatus, new: InferenceServiceStatus) -> bool:
    return old.to_wire() != new.to_wire()


@dataclass(frozen=True, slots=True)
class Transition:
    """One Event to record: a condition changed status or reason, or the phase changed."""

    type: str  # Normal | Warning
    reason: str
    message: str


def transitions(old: InferenceServiceStatus, new: InferenceServiceStatus) -> list[Transition]:
    out: list[Transition] = []
    for c in new.conditions or []:
        before = find(old.conditions, c.type)
        if before is not None and (before.status, before.reason) == (c.status, c.reason):
            continue
        if c.status == "Unknown" and c.reason in (r.AWAITING, r.RECONCILING):
            continue
        kind = "Warning" if c.status == "False" and c.reason != r.PROGRESSING else "Normal"
        out.append(Transition(kind, c.reason, f"{c.type}={c.status}: {c.message}".strip()))
    if old.phase != new.phase and new.phase is not None:
        kind = "Warning" if new.phase in ("Failed", "Degraded") else "Normal"
        out.append(
            Transition(kind, f"Phase{new.phase}", f"Phase changed from {old.phase or 'none'} to {new.phase}.")
        )
    return out


def merge_patch(old: Mapping[str, object], new: Mapping[str, object]) -> dict[str, object]:
    """A JSON merge patch turning ``old`` into ``new``: keys gone from ``new`` are sent as ``None``
    (a merge patch keeps what it does not mention), nested objects recursively; lists replace whole."""
    out: dict[str, object] = {}
    for key, value in new.items():
        before = old.get(key)
        if isinstance(value, Mapping) and isinstance(before, Mapping):
            out[key] = merge_patch(before, value)
        else:
            out[key] = value
    for key in old:
        if key not in new:
            out[key] = None
    return out
