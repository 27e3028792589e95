"""The ai.deckhouse.io/v1alpha1 API as pydantic models, camelCase on the wire.

The CRDs under ``deploy/crds`` are generated from these models (``hack/gen_crds.py``, with ``devtools.crdgen``), so
the two cannot drift apart: a test regenerates them and compares.
"""

from shared.api.base import API_GROUP, API_VERSION, GROUP_VERSION

__all__ = ["API_GROUP", "API_VERSION", "GROUP_VERSION"]
