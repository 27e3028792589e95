"""Cases of ``decide`` that the mutation run (docs/testing.md, "Mutation run") found untested: each
test here fails on the mutant named in its docstring."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from controller.planning import plan_decision
from controller.snapshot import Planning
from shared import names
from shared.api.order import ResolvedModel
from tests.unit.controller.snapshots import (
    GPU,
    SMALL,
    decide_and_build,
    klass,
    ok,
    order_with,
    plan_on,
    resolved_model,
    run_planner,
    serving,
    snap,
    status,
)


def test_the_status_records_every_fact_of_the_resolved_model() -> None:
    """Mutant ``context_length=None`` in the status model (decide.x_decide__mutmut_47)."""
    s = snap()
    _, st = decide_and_build(s, run_planner(s, plan_decision(s)))
    assert st.model is not None
    assert (st.model.format, st.model.quantization) == (SMALL.format, SMALL.quantization_label)
    assert (st.model.parameter_count, st.model.context_length) == (494_032_768, 32768)
    assert st.model.revision == SMALL.revision


def test_the_status_context_length_is_the_one_served() -> None:
    """A sentence-transformers model is served at its max_seq_length (vLLM refuses more), and the
    status says so: mutant ``context_length=m.facts.context_length`` reports 512 for a 256 model."""
    st_model = SMALL.model_copy(update={"context_length": 512, "max_seq_length": 256})
    s = snap(model=resolved_model(st_model))
    _, st = decide_and_build(s, run_planner(s, plan_decision(s)))
    assert st.model is not None and st.model.context_length == 256


def test_a_class_without_authentication_clears_the_auth_secret_name_of_the_status() -> None:
    """Mutant ``clear_auth_secret_name = None`` (decide.x_decide__mutmut_150)."""
    prior = status().model_copy(update={"auth_secret_name": "support-llm-auth"})
    open_class = klass(
        spec={**klass().spec.model_dump(by_alias=True), "exposure": {"authentication": "None"}}
    )
    s = snap(order=order_with(prior), klass=open_class)
    intents, st = decide_and_build(s, run_planner(s, plan_decision(s)))
    assert intents.fields.clear_auth_secret_name is True
    assert st.auth_secret_name is None
    with_token = snap(order=order_with(prior))
    _, st = decide_and_build(with_token, run_planner(with_token, plan_decision(with_token)))
    assert st.auth_secret_name == names.auth_secret(with_token.order.metadata.name)


def test_the_order_adopts_the_certificate_secret_once() -> None:
    """Mutant ``_adopt_tls_secret(s, None)`` (decide.x_decide__mutmut_155)."""
    plan = plan_on(GPU)
    name = names.tls_secret("support-llm")
    unowned: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Secret",
        # what cert-manager writes for the order's Certificate (anything else is a NameConflict)
        "metadata": {
            "name": name,
            "namespace": "support",
            "annotations": {"cert-manager.io/certificate-name": name},
        },
    }
    s = serving(plan)
    s = replace(s, owned=(*s.owned, unowned))
    intents, _ = decide_and_build(s, Planning(outcome=ok(plan)))
    adopted = [o for o in intents.apply if o["kind"] == "Secret" and o["metadata"]["name"] == name]
    assert len(adopted) == 1
    (ref,) = adopted[0]["metadata"]["ownerReferences"]
    assert (ref["uid"], ref["controller"]) == (s.order.metadata.uid, False)
    assert "data" not in adopted[0], "cert-manager keeps the data"
    owned = {**unowned, "metadata": {**unowned["metadata"], "ownerReferences": [ref]}}
    again = replace(s, owned=(*serving(plan).owned, owned))
    intents, _ = decide_and_build(again, Planning(outcome=ok(plan)))
    assert not [o for o in intents.apply if o["kind"] == "Secret" and o["metadata"]["name"] == name]


def test_a_new_model_revision_names_the_old_and_the_new_in_its_event() -> None:
    """Mutant ``old = None`` (decide.x_decide__mutmut_93)."""
    plan = plan_on(GPU)
    prior = status().model_copy(update={"model": ResolvedModel(revision="0ld")})
    s = snap(order=order_with(prior))
    intents, _ = decide_and_build(s, Planning(outcome=ok(plan), trigger="model revision"))
    (message,) = [m for _, reason, m in intents.events if reason == "ModelRevisionChanged"]
    assert f"moved from 0ld to {SMALL.revision}" in message


def test_a_serving_order_whose_class_is_deleted_keeps_its_plan_in_force() -> None:
    """``Intents.plan`` is the plan in force after the reconcile. Mutant ``d.plan = None`` when
    serving through a lost class (decide.x__serve_through__mutmut_18)."""
    plan = plan_on(GPU)
    intents, _ = decide_and_build(serving(plan, klass=None, model=None), Planning())
    assert intents.plan == plan
