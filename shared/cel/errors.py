"""The one error of the CEL environment. Pure."""

from __future__ import annotations


class CelError(ValueError):
    """A selector that does not compile, or whose evaluation is an error or not a bool."""
