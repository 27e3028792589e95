"""Models that need the code of their repository: detected from config.json, refused unless a
recipe of the class opts in, and then launched with --trust-remote-code."""

from __future__ import annotations

from typing import Any

from controller.conditions import resolve
from controller.model_facts.remote_code import needs_remote_code
from controller.planner.recipes import model_recipes
from shared import reasons
from testkit.mirror_facts import facts_of
from testkit.planner import LLAMA_8B, fleet_inventory, make_recipe, plan
from tests.unit.controller.builders import make_class, make_facts

INTERNLM2 = {
    "architectures": ["InternLM2ForCausalLM"],
    "auto_map": {"AutoConfig": "configuration_internlm2.InternLM2Config"},
    "model_type": "internlm2",
}


def test_a_config_whose_model_type_nothing_built_in_knows_needs_remote_code() -> None:
    assert needs_remote_code(INTERNLM2)
    assert needs_remote_code({"auto_map": {"AutoConfig": "x.Y"}})  # no model_type at all


def test_an_auto_map_kept_from_before_upstreaming_does_not() -> None:
    assert not needs_remote_code({**INTERNLM2, "model_type": "phi3"})
    assert not needs_remote_code({**INTERNLM2, "model_type": "chatglm"}), "vLLM ships its own config"
    assert not needs_remote_code({"model_type": "internlm2"}), "no auto_map, no code to run"


def test_phi_3_of_the_mirror_has_an_auto_map_and_still_loads_without_remote_code() -> None:
    assert not facts_of("microsoft/Phi-3-mini-4k-instruct").requires_remote_code


def recipe(name: str, **spec: Any) -> Any:
    return make_recipe(name, **spec)


def test_a_model_that_needs_remote_code_is_refused_when_no_recipe_of_the_class_trusts_it() -> None:
    facts = make_facts(requires_remote_code=True)
    spec = make_class(spec={"recipes": ["vllm"]}).spec
    verdict = resolve.remote_code_verdict(
        facts, spec, [recipe("vllm"), recipe("vllm-trusting", trustRemoteCode=True)]
    )
    assert verdict is not None
    assert (verdict.status, verdict.reason) == ("False", reasons.REMOTE_CODE_NOT_ALLOWED)
    assert "`auto_map`" in verdict.message and "`spec.trustRemoteCode: true`" in verdict.message
    assert reasons.REMOTE_CODE_NOT_ALLOWED in reasons.TERMINAL


def test_a_recipe_of_the_class_that_trusts_remote_code_lets_it_through() -> None:
    facts = make_facts(requires_remote_code=True)
    recipes = [recipe("vllm"), recipe("vllm-trusting", trustRemoteCode=True)]
    assert resolve.remote_code_verdict(facts, make_class().spec, recipes) is None  # no list: all recipes
    assert resolve.remote_code_verdict(make_facts(), make_class().spec, [recipe("vllm")]) is None


def test_the_planner_never_picks_a_recipe_that_does_not_trust_remote_code_for_such_a_model() -> None:
    facts = LLAMA_8B.model_copy(update={"requires_remote_code": True})
    assert model_recipes([recipe("vllm")], facts, "Chat") == []
    refused = plan(fleet_inventory(), facts)
    assert not refused.ok and refused.reason == reasons.NO_COMPATIBLE_RUNTIME_AVAILABLE
    trusted = plan(fleet_inventory(), facts, recipes=[recipe("vllm", trustRemoteCode=True)])
    assert trusted.plan is not None and "--trust-remote-code" in trusted.plan.args
    plain = plan(fleet_inventory(), LLAMA_8B, recipes=[recipe("vllm", trustRemoteCode=True)])
    assert plain.plan is not None and "--trust-remote-code" not in plain.plan.args
