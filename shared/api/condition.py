"""The Kubernetes condition shape (metav1.Condition)."""

from __future__ import annotations

from pydantic import Field

from shared.api.base import ApiModel
from shared.api.enums import ConditionStatus


class Condition(ApiModel):
    """One aspect of the object's state, keyed by ``type``."""

    type: str = Field(description="Type of the condition, in CamelCase, for example `Ready`.")
    status: ConditionStatus = Field(description="Status of the condition: True, False or Unknown.")
    reason: str = Field(
        description="Machine-readable CamelCase reason for the last transition. The reason is the answer: "
        "see the FAQ for what each one asks of you."
    )
    message: str = Field(default="", description="Human-readable sentence about the last transition.")
    observed_generation: int | None = Field(
        default=None,
        description="The metadata.generation of the object this condition was computed from.",
    )
    last_transition_time: str = Field(
        description="When the condition last changed status (RFC 3339). It does not move when only "
        "the reason or message changes."
    )
