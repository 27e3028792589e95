"""End-to-end tests: the controller as a real process against the real control plane."""

from tests.integration.lws_fixture import lws
from tests.integration.platform import ns, platform

__all__ = ["lws", "ns", "platform"]
