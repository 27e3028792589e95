"""Fuzz through the real API server and the webhook: ``python -m bench.fuzz --count 10000``.

- ``gen``: a seeded generator of orders, classes and recipes, valid and broken;
- ``judge``: the contract (pydantic models and the webhook's pure review functions) applied to a
  stored object, and the classification of the API server's answers;
- ``run``: creates (and updates) them against the plane, with the webhook registered and the
  controller running, and counts.
"""
