"""What the real API server stores for our rendered workload is not drift.

``controller/live/drift.py`` compares what we would apply with what is stored. If the server's
defaulting or canonical forms looked like a change, the controller would re-apply and record a
DriftCorrected Event on every reconcile. This applies each checked kind (server-side, dry run:
admission and defaulting run, nothing is kept) and compares.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from controller import render
from controller.kube import apply as kapi
from controller.kube.client import load_api_client
from controller.live import drift
from devtools.cluster.handle import Cluster
from tests.unit.controller.builders import make_class, make_order
from tests.unit.controller.test_render import SETTINGS, Plan

pytestmark = pytest.mark.cluster

Obj = dict[str, Any]


def rendered(namespace: str) -> list[Obj]:
    order = make_order(metadata={"namespace": namespace})
    klass = make_class(spec={"exposure": {"type": "External", "authentication": "Token"}})
    plan = Plan(capacity_requests={"memory": "40Gi"}, cpu="1000m", memory="32768Mi")
    objs = render.workload(order, plan, klass.spec, SETTINGS, revision="abc")
    objs += render.group_network_policies(order, klass.spec)  # a multi-node plan's, without its LWS
    checked = [o for o in objs if o["kind"] in drift.CHECKED_KINDS]
    for obj in checked:
        obj["metadata"]["ownerReferences"] = []  # the order does not exist here
        if obj["kind"] == "Deployment":
            # the PriorityClass admission plugin refuses a class that does not exist
            obj["spec"]["template"]["spec"].pop("priorityClassName", None)
    return checked


def test_the_stored_form_of_every_checked_kind_is_not_drift(cluster: Cluster, namespace: str) -> None:
    api = load_api_client(kubeconfig=str(cluster.kubeconfig))
    objs = rendered(namespace)
    # A single-node plan (with a group's NetworkPolicy added) renders every checked kind but the
    # LeaderWorkerSet of multi-node plans, whose stored form is exercised by
    # tests/integration/e2e/test_multinode.py (no drift loop there).
    assert {o["kind"] for o in objs} == set(drift.CHECKED_KINDS) - {"LeaderWorkerSet"}
    for obj in objs:
        stored = kapi.apply(api, copy.deepcopy(obj), field_manager="drift-test", dry_run=True)
        assert stored["metadata"].get("uid"), stored
        assert drift.drifted(obj, stored) is None, (obj["kind"], drift.drifted(obj, stored))


def test_a_hand_edit_of_the_stored_deployment_is_drift(cluster: Cluster, namespace: str) -> None:
    api = load_api_client(kubeconfig=str(cluster.kubeconfig))
    dep = next(o for o in rendered(namespace) if o["kind"] == "Deployment")
    stored = kapi.apply(api, copy.deepcopy(dep), field_manager="drift-test", dry_run=True)
    stored["spec"]["template"]["spec"]["containers"][0]["image"] = "example.com/other:latest"
    assert drift.drifted(dep, stored) == "spec.template.spec.containers[0].image"


def test_a_hand_edit_of_a_groups_network_policy_is_drift(cluster: Cluster, namespace: str) -> None:
    api = load_api_client(kubeconfig=str(cluster.kubeconfig))
    policy = next(o for o in rendered(namespace) if o["kind"] == "NetworkPolicy")
    stored = kapi.apply(api, copy.deepcopy(policy), field_manager="drift-test", dry_run=True)
    stored["spec"]["ingress"][0]["from"][0]["podSelector"] = {}  # every pod of the namespace
    assert drift.drifted(policy, stored) is not None
