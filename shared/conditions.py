"""Condition bookkeeping and phase derivation, as pure functions (api.md section 3).

- ``set_condition`` keeps ``lastTransitionTime`` unless the status flips.
- ``chain_conditions`` answers the chain in order: a later condition stays ``Unknown`` while an
  earlier one is not ``True``, so an order with a bad class never also reports a model error.
- ``derive_phase`` computes the phase from the conditions alone.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from shared import reasons as r
from shared.api.condition import Condition
from shared.api.enums import ConditionStatus, Phase


@dataclass(frozen=True, slots=True)
class Verdict:
    """The outcome of one step of the chain: the condition's status, reason and message."""

    status: ConditionStatus
    reason: str
    message: str = ""

    @property
    def ok(self) -> bool:
        return self.status == "True"


def true(reason: str, message: str = "") -> Verdict:
    return Verdict("True", reason, message)


def false(reason: str, message: str) -> Verdict:
    return Verdict("False", reason, message)


def unknown(reason: str, message: str = "") -> Verdict:
    return Verdict("Unknown", reason, message)


def find(conditions: Sequence[Condition] | None, type_: str) -> Condition | None:
    for c in conditions or ():
        if c.type == type_:
            return c
    return None


def set_condition(
    conditions: Sequence[Condition] | None,
    type_: str,
    verdict: Verdict,
    *,
    generation: int | None,
    now: str,
) -> list[Condition]:
    """Return a new list with ``type_`` set; ``lastTransitionTime`` moves only when status flips."""
    old = find(conditions, type_)
    transition = old.last_transition_time if old is not None and old.status == verdict.status else now
    new = Condition(
        type=type_,
        status=verdict.status,
        reason=verdict.reason,
        message=verdict.message,
        observed_generation=generation,
        last_transition_time=transition,
    )
    out = [c for c in conditions or () if c.type != type_]
    out.append(new)
    order = {t: i for i, t in enumerate(r.ALL_CONDITIONS)}
    return sorted(out, key=lambda c: order.get(c.type, len(order)))


def chain_conditions(
    verdicts: Mapping[str, Verdict], *, advisory: Collection[str] = ()
) -> dict[str, Verdict]:
    """Fill the chain ClassResolved -> ... -> Ready in order.

    ``verdicts`` holds what each step decided; steps that did not run may be missing. After the
    first condition that is not True, every later condition of the chain is ``Unknown/Awaiting``,
    whatever a step said, except ``Ready``: it is the summary, and carries the first failing
    condition's status and reason (api.md: "Ready ... or the reason of the first failing condition
    above"), so ``kubectl get``'s Reason column always says why. ScalingHealthy is passed through,
    ``Unknown`` when missing. A condition in ``advisory`` is reported as decided but does not
    hold the chain (a serving order keeps its workload conditions judged through it).
    """
    out: dict[str, Verdict] = {}
    blocker: tuple[str, Verdict] | None = None
    for type_ in r.CHAIN:
        if blocker is not None:
            if type_ == r.READY:
                b_type, b = blocker
                out[type_] = Verdict(b.status, b.reason, b.message or f"Condition {b_type} is not True.")
            else:
                out[type_] = unknown(r.AWAITING, f"Waiting for condition {blocker[0]} to be True.")
            continue
        v = verdicts.get(type_, unknown(r.RECONCILING, "Not evaluated yet."))
        out[type_] = v
        if not v.ok and type_ not in advisory:
            blocker = (type_, v)
    out[r.SCALING_HEALTHY] = verdicts.get(
        r.SCALING_HEALTHY, unknown(r.RECONCILING, "Scaling is judged once the order is Ready.")
    )
    return out


def derive_phase(conditions: Sequence[Condition]) -> Phase:
    """Phase from the conditions alone (api.md section 3).

    - Ready: Ready=True and ScalingHealthy is not False.
    - Degraded: Ready=True and ScalingHealthy=False.
    - Failed: Ready=False/ServiceUnhealthy, or any chain condition False with a terminal reason.
    - Pending: everything else.
    """
    ready = find(conditions, r.READY)
    scaling = find(conditions, r.SCALING_HEALTHY)
    if ready is not None and ready.status == "True":
        return "Degraded" if scaling is not None and scaling.status == "False" else "Ready"
    if ready is not None and ready.status == "False" and ready.reason == r.SERVICE_UNHEALTHY:
        return "Failed"
    for type_ in r.CHAIN:
        c = find(conditions, type_)
        if c is not None and c.status == "False" and c.reason in r.TERMINAL:
            return "Failed"
    return "Pending"
