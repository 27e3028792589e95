"""The base model every API object uses: camelCase aliases, strict about unknown fields."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

API_GROUP = "ai.deckhouse.io"
API_VERSION = "v1alpha1"
GROUP_VERSION = f"{API_GROUP}/{API_VERSION}"


class ApiModel(BaseModel):
    """A wire object: fields are snake_case in Python and camelCase in JSON.

    Unknown fields are ignored when reading (the API server has already pruned them), and
    ``to_wire`` drops unset optional fields so that what we write is exactly what we own.
    """

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="ignore",
        frozen=False,
        use_enum_values=True,
    )

    def to_wire(self) -> dict[str, object]:
        """The JSON-ready dict, camelCase, without fields that were never set or are None."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


class ObjectMeta(ApiModel):
    """The part of ``metadata`` the product reads."""

    name: str = ""
    namespace: str | None = None
    uid: str | None = None
    generation: int | None = None
    resource_version: str | None = None
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None
    deletion_timestamp: str | None = None
