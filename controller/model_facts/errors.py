"""The one error of model-facts derivation. Pure."""

from __future__ import annotations


class ModelFactsError(ValueError):
    """The repository holds nothing the platform can serve (no safetensors or GGUF weights)."""
