"""The shipped ClusterRole lets the controller do what render and the prune loop need.

Every kind ``render.workload`` emits is applied (create, patch); the kinds a later plan can stop
wanting are deleted by the controller: the Ingress (External -> ClusterLocal) and the kinds whose
name changes with the plan (claim templates, model volumes). The PVC's missing delete once made
every reconcile after a model edit fail with a 403.
"""

from __future__ import annotations

import pathlib
from typing import Any

import yaml

from controller import render
from controller.config.settings import Settings
from controller.kinds import PRUNED as PRUNED_KINDS
from tests.unit.controller.builders import make_class, make_order
from tests.unit.controller.test_render import Plan

ROOT = pathlib.Path(__file__).resolve().parents[2]
PRUNED = {k.kind for k in PRUNED_KINDS}  # what the controller deletes when a plan stops wanting it
PLURAL = {
    "ResourceClaimTemplate": "resourceclaimtemplates",
    "PersistentVolumeClaim": "persistentvolumeclaims",
    "Certificate": "certificates",
    "Service": "services",
    "Deployment": "deployments",
    "LeaderWorkerSet": "leaderworkersets",
    "HorizontalPodAutoscaler": "horizontalpodautoscalers",
    "ScaledObject": "scaledobjects",
    "Ingress": "ingresses",
    "NetworkPolicy": "networkpolicies",
    "Secret": "secrets",
    "EndpointSlice": "endpointslices",
}


def cluster_role() -> dict[str, Any]:
    docs = yaml.safe_load_all((ROOT / "deploy/base/rbac/controller.yaml").read_text())
    return next(d for d in docs if d["kind"] == "ClusterRole")


def verbs(group: str, resource: str) -> set[str]:
    out: set[str] = set()
    for rule in cluster_role()["rules"]:
        if group in rule["apiGroups"] and resource in rule["resources"]:
            out |= set(rule["verbs"])
    return out


def rendered() -> list[dict[str, Any]]:
    spec = make_class(spec={"exposure": {"type": "External"}, "scaling": {"minReplicas": 0}}).spec
    at_zero = render.ActivatorTarget(("10.0.0.7",), 8443)
    objs = render.workload(make_order(), Plan(), spec, Settings(), revision="abc", activator=at_zero)
    group = render.workload(
        make_order(), Plan(node_count=2, accelerator_count=16), spec, Settings(), revision="a"
    )
    return [*objs, *group, render.auth_secret(make_order(), "t")]


def test_every_rendered_kind_can_be_applied() -> None:
    for obj in rendered():
        group = obj["apiVersion"].rpartition("/")[0]
        assert {"create", "patch", "get"} <= verbs(group, PLURAL[obj["kind"]]), obj["kind"]


# Pruned though no longer rendered: the HPA the controller applied before KEDA (``<order>``).
LEGACY = {"HorizontalPodAutoscaler": "autoscaling"}


def test_every_kind_the_controller_prunes_can_be_deleted_and_no_other() -> None:
    kinds = {o["kind"]: o["apiVersion"].rpartition("/")[0] for o in rendered()}
    assert set(kinds) | set(LEGACY) >= PRUNED
    assert not set(kinds) & set(LEGACY)
    for kind, group in {**kinds, **LEGACY}.items():
        assert ("delete" in verbs(group, PLURAL[kind])) is (kind in PRUNED), kind


def test_hpas_are_only_read_and_deleted_and_scaled_objects_fully_managed() -> None:
    """KEDA writes the HPA ``keda-hpa-<order>``; the controller reads it (ScalingHealthy) and deletes
    only its own HPA of before KEDA."""
    assert verbs("autoscaling", "horizontalpodautoscalers") == {"get", "list", "watch", "delete"}
    assert verbs("keda.sh", "scaledobjects") == {
        "get",
        "list",
        "watch",
        "create",
        "update",
        "patch",
        "delete",
    }


def test_the_controller_may_evict_pods_and_not_delete_them() -> None:
    """Controller-driven preemption goes through the Eviction API (PodDisruptionBudgets hold)."""
    assert verbs("", "pods/eviction") == {"create"}
    assert "delete" not in verbs("", "pods")
