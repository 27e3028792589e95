"""The standard Kubernetes label selector (meta/v1 LabelSelector), as a class's ``namespaceSelector``
carries it. The wire form is the one every Kubernetes object uses."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from shared.api.base import ApiModel

SelectorOperator = Literal["In", "NotIn", "Exists", "DoesNotExist"]


class LabelSelectorRequirement(ApiModel):
    """One requirement on a label: its key, an operator and, for In and NotIn, the values."""

    CEL_RULES: ClassVar[list[dict[str, str]]] = [
        {
            "rule": "self.operator in ['In', 'NotIn'] ? (has(self.values) && size(self.values) > 0) "
            ": (!has(self.values) || size(self.values) == 0)",
            "message": "values must be non-empty with In and NotIn, and empty with Exists and DoesNotExist",
        }
    ]

    key: str = Field(description="The label key the requirement applies to.", max_length=316)
    operator: SelectorOperator = Field(
        description="In, NotIn, Exists or DoesNotExist: how the label's value relates to `values`."
    )
    values: list[str] | None = Field(
        default=None,
        description="The values for In and NotIn (at least one); empty for Exists and DoesNotExist.",
        max_length=256,
    )


class LabelSelector(ApiModel):
    """A label query (meta/v1 LabelSelector): every matchLabels pair and every matchExpressions
    requirement must hold. An empty selector matches everything."""

    match_labels: dict[str, str] | None = Field(
        default=None, description="Labels that must be present with exactly these values."
    )
    match_expressions: list[LabelSelectorRequirement] | None = Field(
        default=None, description="Requirements that must all hold.", max_length=64
    )
