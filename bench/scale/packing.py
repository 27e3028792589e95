"""The offline packing the benchmark compares the controller with: the same planner and the same
ledger, fed the fleet's slices, planning the orders one after another in creation order.

Pure apart from the facts, which the caller reads from the Hub once per model (``hub_facts``).
"""

from __future__ import annotations

import pathlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from controller import render
from controller.conditions import resolve
from controller.model_facts.facts import ModelFacts
from controller.modelhub.client import HubClient
from controller.planner import Inventory, PlanRequest, plan_order
from controller.planner.inventory import DeviceKey
from controller.planner.ledger import Ledger, Use, use_of
from shared.api.inference_class import InferenceServiceClass, InferenceServiceClassSpec
from shared.api.recipe import InferenceRecipe

ROOT = pathlib.Path(__file__).resolve().parents[2]
PLATFORM = ROOT / "deploy" / "base" / "platform"
Obj = Mapping[str, Any]


@dataclass(frozen=True)
class Packing:
    planned: int
    refused: dict[str, int]  # reason -> orders
    outcomes: tuple[str, ...] = ()  # per order, in the order given: "" planned, else the reason
    devices: tuple[tuple[DeviceKey, ...], ...] = ()  # per order: the devices its plan counts on

    @property
    def no_capacity(self) -> int:
        return self.refused.get("NoCapacity", 0)


def bundled_class(name: str = "default-llm") -> InferenceServiceClassSpec:
    for doc in yaml.safe_load_all((PLATFORM / f"{name}.yaml").read_text()):
        if doc and doc.get("kind") == "InferenceServiceClass":
            return InferenceServiceClass.model_validate(doc).spec
    raise LookupError(f"no InferenceServiceClass in {name}.yaml")


def bundled_recipes() -> list[InferenceRecipe]:
    return [InferenceRecipe.model_validate(yaml.safe_load((PLATFORM / "vllm.yaml").read_text()))]


def hub_facts(endpoint: str, repos: Iterable[str], token: str) -> dict[str, ModelFacts]:
    hub = HubClient(endpoint=endpoint)
    return {repo: hub.fetch_facts(repo_id=repo, revision=None, token=token) for repo in sorted(set(repos))}


def pack(
    orders: Iterable[Obj],
    slices: Iterable[Obj],
    device_classes: Iterable[Obj],
    facts: Mapping[str, ModelFacts],
    cspec: InferenceServiceClassSpec,
    recipes: list[InferenceRecipe],
) -> Packing:
    ledger = Ledger()
    for dc in device_classes:
        ledger.on_device_class(dc)
    for s in slices:
        ledger.on_slice(s)
    planned = 0
    refused: dict[str, int] = {}
    outcomes: list[str] = []
    taken: list[tuple[DeviceKey, ...]] = []
    for o in orders:
        meta = o["metadata"]
        model = facts[o["spec"]["model"]["ref"]["name"]]
        verdict, endpoint_type = resolve.policy_verdict(model, cspec)
        if not verdict.ok or endpoint_type is None:
            refused[verdict.reason] = refused.get(verdict.reason, 0) + 1
            outcomes.append(verdict.reason)
            taken.append(())
            continue
        reason, devices = _take(
            ledger, (meta["namespace"], meta["name"]), model, endpoint_type, cspec, recipes
        )
        if reason:
            refused[reason] = refused.get(reason, 0) + 1
        else:
            planned += 1
        outcomes.append(reason)
        taken.append(devices)
    return Packing(planned=planned, refused=refused, outcomes=tuple(outcomes), devices=tuple(taken))


def _take(
    ledger: Ledger,
    key: tuple[str, str],
    model: ModelFacts,
    endpoint_type: Any,
    cspec: InferenceServiceClassSpec,
    recipes: list[InferenceRecipe],
) -> tuple[str, tuple[DeviceKey, ...]]:
    """Plan one order on the ledger's view and book it, as the reconciler does; the refusal or '',
    and the devices."""
    reasons: list[str] = []
    devices: list[tuple[DeviceKey, ...]] = []

    def plan(inventory: Inventory) -> tuple[str | None, Use]:
        outcome = plan_order(
            PlanRequest(
                facts=model,
                endpoint_type=endpoint_type,
                class_spec=cspec,
                recipes=recipes,
                inventory=inventory,
                served_model_name=model.name,
                requires_token=render.requires_token(cspec),
            )
        )
        reasons.append("" if outcome.ok else outcome.reason)
        devices.append(outcome.allocation if outcome.ok else ())
        if not outcome.ok or outcome.plan is None:
            return None, Use()
        return key[1], use_of(outcome.allocation, outcome.shared_bytes)

    ledger.take(key, (), plan)
    return reasons[0], devices[0]
