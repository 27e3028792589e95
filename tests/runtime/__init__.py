"""Tests against the real runtime (vLLM 0.32 CPU, from the cached venv); slow, skipped without it."""
