"""Issue 21, items 1 and 8, against the real API server (no controller, no webhook here).

- the NetworkPolicies of a multi-node group apply with a strict server-side dry run, and the API
  server stores their selectors and rules as rendered (the local plane has no network plugin, so
  nothing enforces them here: what is checked is what a real cluster's plugin would receive);
- a class's ``namespaceSelector`` is in the CRD with the text ``kubectl explain`` shows; the API
  server stores a valid one and refuses ``In`` without values (the CRD's CEL rule) and an unknown
  operator (the enum) before any webhook sees it.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from controller import render
from controller.render.ray import GROUP_INDEX_LABEL, SET_NAME_LABEL
from devtools.cluster.handle import Kubectl
from tests.unit.controller.builders import make_class, make_order

pytestmark = pytest.mark.cluster

Obj = dict[str, Any]


def apply(kubectl: Kubectl, objs: list[Obj], *, dry_run: bool) -> Any:
    args = ["apply", "--validate=strict", "--server-side", "--field-manager=test-tenant", "-o", "json"]
    if dry_run:
        args.append("--dry-run=server")
    return kubectl(*args, "-f", "-", input=yaml.safe_dump_all(objs), check=False)


def test_the_group_network_policies_are_accepted_and_stored_as_rendered(
    kubectl: Kubectl, namespace: str
) -> None:
    order = make_order(
        metadata={"namespace": namespace, "name": "big", "uid": "00000000-0000-0000-0000-000000000001"}
    )
    pols = render.group_network_policies(order, make_class(spec={"scaling": {"minReplicas": 2}}).spec)
    assert [p["metadata"]["name"] for p in pols] == ["big-group-0", "big-group-1"]
    for p in pols:
        p["metadata"].pop("ownerReferences")  # no such order here: the garbage collector would take it
    res = apply(kubectl, pols, dry_run=False)
    assert res.returncode == 0, res.stderr
    stored = yaml.safe_load(
        kubectl("get", "networkpolicy", "big-group-1", "-n", namespace, "-o", "yaml").stdout
    )
    assert stored["spec"]["podSelector"] == {
        "matchLabels": {SET_NAME_LABEL: "big-group", GROUP_INDEX_LABEL: "1"}
    }
    assert stored["spec"]["policyTypes"] == ["Ingress"]
    peers, open_ports = stored["spec"]["ingress"]
    assert peers == {"from": [{"podSelector": stored["spec"]["podSelector"]}]}  # every port, the group only
    assert sorted(x["port"] for x in open_ports["ports"]) == [8443, 9090] and "from" not in open_ports


def klass(name: str, selector: Any) -> Obj:
    spec = make_class().model_dump(mode="json", by_alias=True, exclude_none=True)
    spec["spec"]["namespaceSelector"] = selector
    return {"apiVersion": "ai.deckhouse.io/v1alpha1", "kind": "InferenceServiceClass", "metadata": {"name": name},
            "spec": spec["spec"]}  # fmt: skip


def test_the_api_server_stores_a_namespace_selector(kubectl: Kubectl, crds: None) -> None:
    selector = {
        "matchLabels": {"team": "support"},
        "matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["a", "b"]}],
    }
    res = apply(kubectl, [klass("tenant-ns-selector", selector)], dry_run=True)
    assert res.returncode == 0, res.stderr
    assert yaml.safe_load(res.stdout)["spec"]["namespaceSelector"] == selector


@pytest.mark.parametrize(
    ("selector", "refusal"),
    [
        (
            {"matchExpressions": [{"key": "team", "operator": "In"}]},
            "values must be non-empty with In and NotIn",
        ),
        ({"matchExpressions": [{"key": "team", "operator": "Exists", "values": ["x"]}]}, "empty with Exists"),
        ({"matchExpressions": [{"key": "team", "operator": "Equals"}]}, "Unsupported value"),
    ],
    ids=["in-without-values", "exists-with-values", "unknown-operator"],
)
def test_the_api_server_refuses_a_broken_namespace_selector(
    kubectl: Kubectl, crds: None, selector: Obj, refusal: str
) -> None:
    res = apply(kubectl, [klass("tenant-ns-broken", selector)], dry_run=True)
    assert res.returncode != 0
    assert "spec.namespaceSelector.matchExpressions[0]" in res.stderr and refusal in res.stderr


def test_kubectl_explain_describes_the_namespace_selector(kubectl: Kubectl, crds: None) -> None:
    text = " ".join(kubectl("explain", "inferenceserviceclasses.spec.namespaceSelector").stdout.split())
    assert "worded exactly as for a" in text and "Unset: every" in text
    ops = kubectl(
        "explain", "inferenceserviceclasses.spec.namespaceSelector.matchExpressions.operator"
    ).stdout
    assert "DoesNotExist" in ops
