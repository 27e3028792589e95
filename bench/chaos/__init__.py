"""Chaos on the real plane: a seeded churn of orders run twice, without and with faults, and compared.

``python -m bench.chaos [--minutes N] [--seed S]``. See ``docs/benchmarks.md`` (Chaos) for what is
injected and what is compared. The pieces are shared with ``tests/integration/e2e/test_chaos.py``:

- ``stack``: the product around a running plane (CRDs, class, recipe, RBAC, settings, Hub mirror,
  runtime stand-in, the webhook registered for the chaos namespaces, controller replicas);
- ``churn``: the seeded plan of operations and its executor (retries what the plane refuses);
- ``faults``: the fault schedule and the injectors (leader SIGKILL, component restarts, webhook
  restart, Hub outage);
- ``watch``: what is sampled while the churn runs (tokens, workloads, Ready through the outage);
- ``verdict``: the final state of a run, and the comparison of two runs.
"""
