"""The pure parts of devtools.dump_native_model_types, and that the committed file is the pinned release's."""

from __future__ import annotations

import json

import pytest

from devtools.dump_native_model_types import OUT, hub_requirement, least_transformers
from shared import runtime_images


def test_the_least_transformers_is_the_lower_bound_of_vllms_requirement() -> None:
    requires = ["torch==2.13.0", "transformers<5.20.0,>=5.16.1", 'pytest; extra == "test"']
    assert least_transformers(requires) == "5.16.1"
    with pytest.raises(ValueError, match="transformers"):
        least_transformers(["transformers"])
    with pytest.raises(ValueError, match="no lower bound"):
        least_transformers(['transformers>=4; extra == "x"'])


def test_the_hub_requirement_is_transformers_own() -> None:
    meta = "Name: transformers\nRequires-Dist: huggingface-hub<2.0,>=1.5.0\nRequires-Dist: x; extra == 'y'\n"
    assert hub_requirement(meta) == "huggingface-hub<2.0,>=1.5.0"
    with pytest.raises(ValueError, match="no huggingface-hub"):
        hub_requirement("Requires-Dist: huggingface-hub>=1; extra == 'hub'\n")


def test_the_committed_types_are_the_pinned_releases() -> None:
    doc = json.loads(OUT.read_text())
    assert doc["vllm"] == runtime_images.PINNED
    assert "qwen2" in doc["transformers_model_types"] and "kimi_k2" in doc["vllm_model_types"]
