"""What the platform learns about a Hugging Face model, from what ``controller.modelhub.client`` fetched. Pure.

- ``facts``: ``ModelFacts``, what the rest of the controller reads (the planner, the renderer, the checks);
- ``derive``: model info + config.json + tensor headers -> ``ModelFacts`` (``model_facts``);
- ``gguf``: which GGUF file is served, its name's quantization, and its header's key/values;
- ``parameters``: the logical parameter count from safetensors headers or published totals;
- ``quantization``: a ``quantization_config`` -> method, bits, group size;
- ``config``: config.json numbers (context length, dtype);
- ``sane``: the bounds every number must be within (``ImplausibleModelError`` names the field).
- ``remote_code``: whether a model needs its repository's code (the known types: ``native-model-types.json``).
"""

from __future__ import annotations

from controller.model_facts.config import context_length
from controller.model_facts.derive import (
    endpoint_types,
    model_facts,
    safetensors_bytes,
    sibling_sizes,
    weight_format,
)
from controller.model_facts.errors import ImplausibleModelError, ModelFactsError
from controller.model_facts.gguf import (
    GGUF_PREFERENCE,
    config_from_gguf,
    gguf_parts,
    gguf_quantization,
    gguf_type,
    parse_gguf_header,
    pick_gguf,
)
from controller.model_facts.parameters import TensorMeta, logical_parameter_count, parameter_count
from controller.model_facts.quantization import Quantization, quantization

__all__ = [
    "GGUF_PREFERENCE",
    "ImplausibleModelError",
    "ModelFactsError",
    "Quantization",
    "TensorMeta",
    "config_from_gguf",
    "context_length",
    "endpoint_types",
    "gguf_parts",
    "gguf_quantization",
    "gguf_type",
    "logical_parameter_count",
    "model_facts",
    "parameter_count",
    "parse_gguf_header",
    "pick_gguf",
    "quantization",
    "safetensors_bytes",
    "sibling_sizes",
    "weight_format",
]
