"""The router tests' TLS fixtures (a platform CA, a "real runtime" backend and the pairs), shared with
the tests of an order at zero (test_runtime_zero.py)."""

from tests.unit.standins.test_runtime_router import backend, backend_pair, ca, standin_pair

__all__ = ["backend", "backend_pair", "ca", "standin_pair"]
