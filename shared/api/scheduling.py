"""Where the runtime pods may go: the Kubernetes toleration, as a class or the module settings carry
it for tainted GPU nodes. The wire form is the core/v1 Toleration's."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from shared.api.base import ApiModel

TolerationOperator = Literal["Exists", "Equal"]
TaintEffect = Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]
# A label key: an optional DNS-subdomain prefix and `/`, then a name of up to 63 characters.
LABEL_KEY_PATTERN = (
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$"
)
LABEL_VALUE_PATTERN = r"^(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?$"


class Toleration(ApiModel):
    """A toleration of a node taint, as on a pod (core/v1 Toleration)."""

    key: str | None = Field(
        default=None,
        description="The taint key, for example `nvidia.com/gpu`. Empty with operator Exists matches every taint.",
        max_length=316,
    )
    operator: TolerationOperator | None = Field(
        default=None, description="Equal (the default) compares `value`; Exists matches any value."
    )
    value: str | None = Field(
        default=None, description="The taint value to match with operator Equal.", max_length=63
    )
    effect: TaintEffect | None = Field(
        default=None,
        description="The taint effect to match: NoSchedule, PreferNoSchedule or NoExecute. Empty matches all.",
    )
    toleration_seconds: int | None = Field(
        default=None,
        description="With effect NoExecute: how long the pod stays after the taint appears. Unset: forever.",
    )
