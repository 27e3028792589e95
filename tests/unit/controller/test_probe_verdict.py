"""Ready from the probe book after a start: a serving order keeps its verdict until the first probe
of the new process answers (so a restart writes no status), a never-probed order awaits it, and a
new generation is not carried over."""

from __future__ import annotations

from typing import Any

from controller import decide
from controller.config.settings import Settings
from controller.snapshot import ProbeState, Snapshot
from shared import reasons as r
from tests.unit.controller.builders import make_order

URL = "https://support-llm.support.svc"


def snapshot(
    ready: dict[str, Any] | None, *, generation: int = 1, probe: ProbeState | None = None
) -> Snapshot:
    conditions = [ready] if ready else []
    order = make_order(metadata={"generation": generation}, status={"conditions": conditions})
    return Snapshot(
        now=1000.0,
        settings=Settings(),
        order=order,
        resource_version="1",
        klass=None,
        recipes=(),
        model=None,
        plan_in_force=None,
        deployment=None,
        hpa=None,
        pods=(),
        owned=(),
        has_token=True,
        token="t",
        probe=probe or ProbeState(),
    )


def condition(status: str, reason: str, message: str, observed: int = 1) -> dict[str, Any]:
    return {
        "type": r.READY,
        "status": status,
        "reason": reason,
        "message": message,
        "observedGeneration": observed,
        "lastTransitionTime": "2026-12-01T00:00:00Z",
    }


def verdict(s: Snapshot) -> tuple[Any, decide._Draft]:
    d = decide._Draft()
    return decide._probe(s, d, "t"), d


def test_a_serving_order_keeps_its_ready_verdict_until_the_first_probe_of_a_new_process() -> None:
    v, d = verdict(snapshot(condition("True", r.SERVING, "The Inference API answers: 1 model(s).")))
    assert (v.status, v.reason, v.message) == ("True", r.SERVING, "The Inference API answers: 1 model(s).")
    assert d.probe is not None, "the first probe is asked for at once"


def test_an_unhealthy_order_keeps_its_verdict_too() -> None:
    v, _ = verdict(snapshot(condition("False", r.SERVICE_UNHEALTHY, "3 consecutive probes failed")))
    assert (v.status, v.reason) == ("False", r.SERVICE_UNHEALTHY)


def test_a_never_probed_order_awaits_the_first_probe() -> None:
    v, _ = verdict(snapshot(None))
    assert (v.status, v.reason) == ("Unknown", r.AWAITING)
    v, _ = verdict(snapshot(condition("False", r.HEALTH_CHECK_FAILED, "not yet")))
    assert (v.status, v.reason) == ("Unknown", r.AWAITING)


def test_a_verdict_of_an_older_generation_is_not_carried_over() -> None:
    v, _ = verdict(snapshot(condition("True", r.SERVING, "answers", observed=1), generation=2))
    assert (v.status, v.reason) == ("Unknown", r.AWAITING)


def test_a_probe_result_wins_over_the_carried_verdict() -> None:
    failed = ProbeState(ok=False, detail="HTTP 503", failures=1, at=999.0)
    v, _ = verdict(snapshot(condition("True", r.SERVING, "answers"), probe=failed))
    assert v.status == "True"
    assert "the last probe failed" in v.message
