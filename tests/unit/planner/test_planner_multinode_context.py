"""The context a multi-node replica serves (``multinode.max_model_len``). The mutation run
(docs/testing.md) found no test of it: ``weights * share / per_node`` turned into ``* per_node``
(every spread plan serving 0 tokens) survived."""

from __future__ import annotations

from tests.unit.planner.test_planner_multinode import H100, LLAMA_405B, facts, fleet, plan_on


def test_the_405b_on_two_nodes_of_eight_h100_serves_its_whole_context() -> None:
    """By hand, per device: 80 GiB x 0.9 = 77.31 GB; weights 811.7 GB / 2 stages / 8 = 50.73 GB;
    overhead 3.6 GiB + 1.26 GiB x 16384 / 4096 = 8.64 GiB = 9.28 GB; 17.30 GB left, 138.4 GB a stage.
    KV: 126 layers x 8 heads x 128 x 2 (K, V) x 2 bytes = 516,096 B a token, half of it a stage:
    about 536,000 tokens, more than the model's 131,072."""
    f = facts(LLAMA_405B)
    assert (f.num_hidden_layers, f.num_key_value_heads, f.head_dim, f.context_length) == (126, 8, 128, 131072)
    out = plan_on(LLAMA_405B, fleet(2, H100))
    assert out.plan is not None and out.plan.accelerator_count == 16
    assert out.plan.max_model_len == 131072
