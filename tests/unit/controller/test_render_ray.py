"""Issue 21 item 1: Ray's ports admit only the group's own pods; the serving port stays open; Ray's
token authentication is on when the class requires a token.

The local plane has no network plugin, so nothing enforces a NetworkPolicy there: these tests judge
what is rendered, with the networking.k8s.io/v1 semantics written out in ``admits``."""

from __future__ import annotations

from typing import Any

import pytest

from controller import render
from controller.render.ray import GROUP_INDEX_LABEL, RAY_AUTH_MODE_ENV, RAY_AUTH_TOKEN_ENV, SET_NAME_LABEL
from shared import names
from tests.unit.controller.builders import make_class, make_order
from tests.unit.controller.test_render import SETTINGS, Plan

PLAN = Plan(accelerator_count=16, node_count=2, model_volume="833Gi")
RAY_PORTS = (6379, 10001, 8265, 52365, 10002, 19999)  # GCS, client, dashboard, agent, worker ports
Obj = dict[str, Any]


def workload(**spec: Any) -> list[Obj]:
    return render.workload(make_order(), PLAN, make_class(spec=spec).spec, SETTINGS, revision="abc")


def policies(**spec: Any) -> list[Obj]:
    return [o for o in workload(**spec) if o["kind"] == "NetworkPolicy"]


def _matches(selector: Obj, labels: dict[str, str]) -> bool:
    assert set(selector) <= {"matchLabels"}, "only matchLabels is rendered"
    return all(labels.get(k) == v for k, v in selector.get("matchLabels", {}).items())


def admits(pols: list[Obj], pod: dict[str, str], peer: dict[str, str], port: int) -> bool:
    """networking.k8s.io/v1, same namespace: a pod no policy selects accepts everything; a selected
    pod accepts what some selecting policy's ingress rule allows (a rule without ``from`` admits
    every source, without ``ports`` every port)."""
    selecting = [p for p in pols if _matches(p["spec"]["podSelector"], pod)]
    if not selecting:
        return True
    for p in selecting:
        assert p["spec"]["policyTypes"] == ["Ingress"]
        for rule in p["spec"].get("ingress", []):
            sources = rule.get("from")
            ports = rule.get("ports")
            source_ok = sources is None or any(_matches(s["podSelector"], peer) for s in sources)
            port_ok = ports is None or any(x["port"] == port and x["protocol"] == "TCP" for x in ports)
            if source_ok and port_ok:
                return True
    return False


def group_pod(group: int, *, worker: int = 0, set_name: str = "support-llm-group") -> dict[str, str]:
    return {
        SET_NAME_LABEL: set_name,
        GROUP_INDEX_LABEL: str(group),
        "leaderworkerset.sigs.k8s.io/worker-index": str(worker),
        names.LABEL_ORDER: "support-llm",
    }


def test_each_group_gets_a_policy_on_lws_pod_labels_applied_before_the_set() -> None:
    objs = workload(scaling={"minReplicas": 2})
    kinds = [o["kind"] for o in objs]
    pols = [o for o in objs if o["kind"] == "NetworkPolicy"]
    assert [p["metadata"]["name"] for p in pols] == ["support-llm-group-0", "support-llm-group-1"]
    assert max(i for i, k in enumerate(kinds) if k == "NetworkPolicy") < kinds.index("LeaderWorkerSet")
    for i, p in enumerate(pols):
        assert p["apiVersion"] == "networking.k8s.io/v1"
        assert p["spec"]["podSelector"] == {
            "matchLabels": {SET_NAME_LABEL: "support-llm-group", GROUP_INDEX_LABEL: str(i)}
        }
        (ref,) = p["metadata"]["ownerReferences"]
        assert ref["kind"] == "InferenceService" and ref["controller"] is True
        assert p["metadata"]["labels"][names.LABEL_ORDER] == "support-llm"


@pytest.mark.parametrize("port", RAY_PORTS)
def test_ray_ports_admit_the_groups_own_pods_only(port: int) -> None:
    pols = policies(scaling={"minReplicas": 2})
    leader, worker = group_pod(0), group_pod(0, worker=1)
    assert admits(pols, leader, worker, port) and admits(pols, worker, leader, port)
    assert not admits(pols, leader, group_pod(1), port), "another group of the same set"
    assert not admits(pols, leader, group_pod(0, set_name="other-group"), port), "another order's group"
    assert not admits(pols, leader, {"app": "anything"}, port), "any other pod of the cluster"


@pytest.mark.parametrize("port", [names.RUNTIME_PORT, names.FETCHER_METRICS_PORT])
def test_the_serving_and_progress_ports_stay_open_to_every_source(port: int) -> None:
    pols = policies()
    assert admits(pols, group_pod(0), {"app.kubernetes.io/name": "ingress-nginx"}, port)
    assert admits(pols, group_pod(0, worker=1), {}, port)


def test_a_single_node_plan_renders_no_policy() -> None:
    objs = render.workload(make_order(), Plan(), make_class().spec, SETTINGS, revision="abc")
    assert not [o for o in objs if o["kind"] == "NetworkPolicy"]


def _runtime_env(objs: list[Obj], template: str) -> dict[str, Obj]:
    lws = next(o for o in objs if o["kind"] == "LeaderWorkerSet")
    (runtime,) = lws["spec"]["leaderWorkerTemplate"][template]["spec"]["containers"]
    return {e["name"]: e for e in runtime["env"]}


@pytest.mark.parametrize("template", ["leaderTemplate", "workerTemplate"])
def test_ray_token_authentication_is_on_with_the_orders_token(template: str) -> None:
    env = _runtime_env(workload(), template)
    assert env[RAY_AUTH_MODE_ENV]["value"] == "token"
    ref = env[RAY_AUTH_TOKEN_ENV]["valueFrom"]["secretKeyRef"]
    assert ref == {"name": names.auth_secret("support-llm"), "key": names.AUTH_TOKEN_KEY}
    assert "value" not in env[RAY_AUTH_TOKEN_ENV], "the token never sits in the pod spec"


def test_no_ray_token_when_the_class_has_no_token() -> None:
    env = _runtime_env(workload(exposure={"authentication": "None"}), "leaderTemplate")
    assert RAY_AUTH_MODE_ENV not in env and RAY_AUTH_TOKEN_ENV not in env
    assert policies(exposure={"authentication": "None"}), "the NetworkPolicy guards Ray all the same"
