"""The errors of model-facts derivation. Pure."""

from __future__ import annotations


class ModelFactsError(ValueError):
    """The repository holds nothing the platform can serve (no safetensors or GGUF weights)."""


class ImplausibleModelError(ModelFactsError):
    """A number, a size or a nesting in the repository's metadata is zero, negative or beyond sane
    bounds; the message names the file and the field. The Hub client refuses such a commit as
    ``ModelNotReady`` instead of planning with it."""
