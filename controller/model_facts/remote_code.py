"""Whether a model needs the code of its own repository to load. Pure.

A ``config.json`` with ``auto_map`` points at Python files of the repository. Many repositories keep
one from before their architecture was upstreamed (``microsoft/Phi-3-mini-4k-instruct`` does), and
they load without that code: transformers and vLLM prefer their own class for a ``model_type`` they
know. Only a model whose ``model_type`` neither knows needs ``--trust-remote-code``, which runs the
repository's code in the runtime pod. The known types are frozen in ``native-model-types.json``
(transformers' ``CONFIG_MAPPING_NAMES`` at the least version the pinned vLLM requires, and vLLM's own
config registry).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

_DATA = Path(__file__).with_name("native-model-types.json")


@functools.cache
def native_model_types() -> frozenset[str]:
    doc = json.loads(_DATA.read_text())
    return frozenset(doc["transformers_model_types"]) | frozenset(doc["vllm_model_types"])


def needs_remote_code(config: Mapping[str, Any]) -> bool:
    """True when ``config`` maps classes to repository code and its model type is not built in."""
    if not config.get("auto_map"):
        return False
    model_type = config.get("model_type")
    return not isinstance(model_type, str) or model_type not in native_model_types()
