"""Fuzz through the real API server and the webhook: ``python -m bench.fuzz --count 10000``.

- ``gen``: a seeded generator of orders, classes and recipes, valid and broken;
- ``contract``: what the contract refuses, read from the CRDs of ``deploy/crds`` and the documents
  (never from the webhook's or the API models' code);
- ``judge``: that contract applied to a stored object, and the classification of the API server's
  answers;
- ``run``: creates (and updates) them against the plane, with the webhook registered and the
  controller running, and counts.
"""
