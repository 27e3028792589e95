"""Class resolution and the model policy checks: the first two links of the chain. Pure.

``class_verdict`` answers ClassResolved for an order; ``class_readiness`` answers the class's own
Ready condition (which also reports placement problems, left to the order's Planned condition as
PlacementUndecidable). ``policy_verdict`` checks a model's facts against the class's model policy
and picks the endpoint type; ``remote_code_verdict`` refuses a model that needs the code of its
repository unless a recipe of the class opts in.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from controller.model_facts.facts import ModelFacts, hub_repo
from shared import reasons as r
from shared.api.enums import EndpointType
from shared.api.inference_class import InferenceServiceClass, InferenceServiceClassSpec
from shared.api.order import ModelSpec
from shared.api.recipe import InferenceRecipe
from shared.conditions import Verdict, false, true
from shared.quantity import QuantityError, parse_parameter_count


def _missing_recipes(spec: InferenceServiceClassSpec, recipe_names: Collection[str]) -> list[str]:
    return [n for n in spec.recipes or () if n not in recipe_names]


def class_verdict(
    name: str, klass: InferenceServiceClass | None, *, recipe_names: Collection[str]
) -> Verdict:
    """ClassResolved for an order naming class ``name``."""
    if klass is None:
        return false(
            r.CLASS_NOT_FOUND,
            f"InferenceServiceClass `{name}` does not exist: check `spec.inferenceServiceClassName` against "
            "the classes your administrator ships.",
        )
    spec = klass.spec
    if not spec.model_policy.allowed_endpoint_types:
        return false(
            r.CLASS_NOT_READY,
            f"InferenceServiceClass `{name}` is not ready: `spec.modelPolicy.allowedEndpointTypes` is empty.",
        )
    missing = _missing_recipes(spec, recipe_names)
    if missing:
        return false(
            r.CLASS_NOT_READY,
            f"InferenceServiceClass `{name}` is not ready: recipe(s) {', '.join(sorted(missing))} do not exist.",
        )
    return true(r.RESOLVED, f"InferenceServiceClass `{name}` is ready.")


def class_readiness(
    spec: InferenceServiceClassSpec,
    *,
    recipe_names: Collection[str],
    device_class_names: Collection[str],
    selector_error: str | None,
    namespace_selector_error: str | None = None,
) -> Verdict:
    """The class's Ready condition: False when a referenced object is missing or a selector is bad."""
    problems: list[str] = []
    reason = ""
    if not spec.model_policy.allowed_endpoint_types:
        problems.append("`spec.modelPolicy.allowedEndpointTypes` must not be empty")
        reason = reason or "EmptyAllowList"
    missing_recipes = _missing_recipes(spec, recipe_names)
    if missing_recipes:
        problems.append(f"recipe(s) {', '.join(sorted(missing_recipes))} do not exist")
        reason = reason or "RecipeNotFound"
    missing_dc = [n for n in spec.placement.device_class_names if n not in device_class_names]
    if missing_dc:
        problems.append(f"DeviceClass(es) {', '.join(missing_dc)} do not exist")
        reason = reason or "DeviceClassNotFound"
    if selector_error:
        problems.append(f"`spec.placement.selector` does not compile: {selector_error}")
        reason = reason or "SelectorInvalid"
    if namespace_selector_error:
        problems.append(namespace_selector_error)
        reason = reason or "NamespaceSelectorInvalid"
    if problems:
        return false(reason, "; ".join(problems) + ".")
    return true("Ready", "Every referenced object exists and the selector compiles.")


def source_verdict(model: ModelSpec, spec: InferenceServiceClassSpec) -> Verdict | None:
    """SourceNotAllowed when the class's allowedSources excludes the order's source, else None."""
    allowed = spec.model_policy.allowed_sources
    if allowed and model.src not in allowed:
        return false(
            r.SOURCE_NOT_ALLOWED,
            f"`spec.model.src` is `{model.src}`, but the class allows only {', '.join(allowed)}: use another "
            "source or another class.",
        )
    return None


def pick_endpoint_type(allowed: list[EndpointType], offered: Collection[EndpointType]) -> EndpointType | None:
    """The first contract in the class's order that the model offers."""
    for t in allowed:
        if t in offered:
            return t
    return None


def policy_verdict(facts: ModelFacts, spec: InferenceServiceClassSpec) -> tuple[Verdict, EndpointType | None]:
    """The model policy of the class against the model's facts; on success, the endpoint type picked."""
    policy = spec.model_policy
    picked = pick_endpoint_type(list(policy.allowed_endpoint_types), facts.endpoint_types)
    if picked is None:
        offered = ", ".join(facts.endpoint_types) or "no known API contract"
        return (
            false(
                r.ENDPOINT_TYPE_POLICY_CONFLICT,
                f"The model offers {offered}; the class allows {', '.join(policy.allowed_endpoint_types)}: "
                "you need a different class.",
            ),
            None,
        )
    if policy.allowed_formats and facts.format not in policy.allowed_formats:
        return (
            false(
                r.FORMAT_NOT_ALLOWED,
                f"The model's format is {facts.format}; the class allows {', '.join(policy.allowed_formats)}.",
            ),
            None,
        )
    bounds = policy.parameter_count
    if bounds is not None:
        try:
            lo = parse_parameter_count(bounds.min) if bounds.min is not None else None
            hi = parse_parameter_count(bounds.max) if bounds.max is not None else None
        except QuantityError as e:
            return false(
                r.PARAMETER_COUNT_NOT_ALLOWED, f"The class's parameterCount bounds are invalid: {e}."
            ), None
        n = facts.parameter_count
        if (lo is not None and n < lo) or (hi is not None and n > hi):
            return (
                false(
                    r.PARAMETER_COUNT_NOT_ALLOWED,
                    f"The model has {_human(n)} parameters; the class allows {_range(lo, hi)}.",
                ),
                None,
            )
    return true(r.RESOLVED, f"{facts.name} resolved; serving it as {picked}."), picked


def remote_code_verdict(
    facts: ModelFacts, spec: InferenceServiceClassSpec, recipes: Sequence[InferenceRecipe]
) -> Verdict | None:
    """RemoteCodeNotAllowed when the model needs the code of its repository (``auto_map`` in its
    config.json) and no recipe of the class trusts remote code; None otherwise.

    ``recipes`` are every recipe the controller knows; the class's ``spec.recipes`` narrows them.
    Such a model must not be planned: vLLM would refuse to start it without ``--trust-remote-code``.
    """
    if not facts.requires_remote_code:
        return None
    allowed = set(spec.recipes or ()) or {r.metadata.name for r in recipes}
    if any(r.metadata.name in allowed and r.spec.trust_remote_code for r in recipes):
        return None
    return false(
        r.REMOTE_CODE_NOT_ALLOWED,
        f"{facts.name} needs code from its repository (`auto_map` in config.json) and no recipe of the class "
        "trusts remote code: your administrator must set `spec.trustRemoteCode: true` on a recipe of the "
        "class, or choose a model that runs without it.",
    )


def _human(n: int) -> str:
    for unit, size in (("T", 10**12), ("B", 10**9), ("M", 10**6), ("K", 10**3)):
        if n >= size:
            return f"{n / size:.2f}".rstrip("0").rstrip(".") + unit
    return str(n)


def _range(lo: int | None, hi: int | None) -> str:
    if lo is not None and hi is not None:
        return f"{_human(lo)} to {_human(hi)}"
    if lo is not None:
        return f"at least {_human(lo)}"
    return f"at most {_human(hi or 0)}"


def catalog_facts(name: str, kind: str, model: dict[str, object] | None) -> tuple[Verdict, ModelFacts | None]:
    """ModelResolved for a catalog model read from the cluster (``model`` is the raw object or None)."""
    from shared.api.catalog import CatalogModel  # local: keeps the import graph of the pure core small

    if model is None:
        return false(r.MODEL_NOT_FOUND, f"{kind} `{name}` does not exist in the catalog."), None
    parsed = CatalogModel.model_validate(model)
    status = parsed.status
    if status.phase != "Ready" or status.resolved is None:
        return (
            false(
                r.MODEL_NOT_READY, f"{kind} `{name}` is not ready yet (phase {status.phase or 'unknown'})."
            ),
            None,
        )
    res = status.resolved
    if res.parameter_count is None:
        return false(r.MODEL_NOT_READY, f"{kind} `{name}` does not report its parameter count yet."), None
    uri = status.source.uri if status.source else None
    if hub_repo(uri) is None:
        where = f"at `{uri}`" if uri else "without a `status.source.uri`"
        return (
            false(
                r.MODEL_NOT_READY,
                f"{kind} `{name}` has its weights {where}; the model fetcher downloads from a Hugging Face "
                "Hub (or its mirror) only: `hf://<org>/<repo>`.",
            ),
            None,
        )
    quant = (res.quantization or "none").lower()
    method, _, bits = quant.partition("-")
    heads = res.num_attention_heads
    hidden = res.hidden_size
    facts = ModelFacts(
        source="Catalog",
        name=name,
        revision=status.source.revision if status.source else None,
        architecture=res.architecture,
        endpoint_types=tuple(res.supported_endpoint_types or ()),
        format=res.format or "Safetensors",
        quantization=method or "none",
        quantization_bits=int(bits.removesuffix("bit")) if bits.removesuffix("bit").isdigit() else None,
        parameter_count=res.parameter_count,
        context_length=res.context_window_tokens,
        torch_dtype=res.torch_dtype,
        num_hidden_layers=res.num_hidden_layers,
        num_attention_heads=heads,
        num_key_value_heads=res.num_key_value_heads or heads,
        head_dim=res.head_dim or (hidden // heads if hidden and heads else None),
        hidden_size=hidden,
        weights_bytes=res.weights_bytes,
        source_uri=uri,
    )
    return true(r.RESOLVED, f"{kind} `{name}` resolved."), facts
