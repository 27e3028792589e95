"""Which InferenceRecipes can serve a model, and on which hardware. Pure.

A recipe fits the model when it serves the endpoint type, loads the format and knows the
architecture (``"*"`` or unset means all), and, for a model that needs the code of its repository
(``auto_map`` in config.json), opts in with ``trustRemoteCode``. It fits the hardware when it knows the model's
quantization method at a minimum compute capability the device reaches.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from controller.model_facts.facts import ModelFacts
from shared.api.recipe import InferenceRecipe
from shared.cel import Semver

DEFAULT_METHODS = {"none": "7.0"}


@dataclass(frozen=True)
class RecipeChoice:
    """A recipe that fits the model, with the least compute capability it needs for its method."""

    recipe: InferenceRecipe
    min_capability: Semver | None  # None: the recipe does not know the model's quantization method

    @property
    def name(self) -> str:
        return self.recipe.metadata.name


def ordered_recipes(
    recipes: Sequence[InferenceRecipe], preference: Sequence[str] | None
) -> list[InferenceRecipe]:
    """The class's preference list in order (unknown names skipped); empty means all, by name."""
    by_name = {r.metadata.name: r for r in recipes}
    if preference:
        return [by_name[n] for n in dict.fromkeys(preference) if n in by_name]
    return [by_name[n] for n in sorted(by_name)]


def quantization_method(facts: ModelFacts) -> str:
    """The method a recipe must list: the model's quantization, ``gguf`` for GGUF files."""
    if facts.format == "GGUF":
        return "gguf"
    return (facts.quantization or "none").lower()


def model_recipes(
    recipes: Sequence[InferenceRecipe], facts: ModelFacts, endpoint_type: str
) -> list[RecipeChoice]:
    """Recipes that serve the endpoint type, format and architecture, in order."""
    method = quantization_method(facts)
    out: list[RecipeChoice] = []
    for recipe in recipes:
        spec = recipe.spec
        if endpoint_type not in spec.endpoint_types or facts.format not in spec.formats:
            continue
        archs = spec.architectures or ["*"]
        if "*" not in archs and facts.architecture not in archs:
            continue
        if facts.requires_remote_code and not trusts_remote_code(recipe):
            continue
        out.append(RecipeChoice(recipe=recipe, min_capability=min_capability(recipe, method)))
    return out


def trusts_remote_code(recipe: InferenceRecipe) -> bool:
    return bool(recipe.spec.trust_remote_code)


def min_capability(recipe: InferenceRecipe, method: str) -> Semver | None:
    supports = {q.method.lower(): q.min_compute_capability for q in recipe.spec.quantizations or []}
    if not recipe.spec.quantizations:
        supports = dict(DEFAULT_METHODS)
    if method == "gguf" and "gguf" not in supports and "GGUF" in recipe.spec.formats:
        supports["gguf"] = supports.get("none", "7.0")
    text = supports.get(method)
    return Semver.parse(text, normalize=True) if text else None


def runs_on(choice: RecipeChoice, capability: Semver | None) -> bool:
    """The recipe knows the method and the device reaches its capability (unknown capability: no)."""
    if choice.min_capability is None or capability is None:
        return False
    return not capability < choice.min_capability
