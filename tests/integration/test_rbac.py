"""Who may do what, asked of the real API server by impersonation (``kubectl auth can-i --as``).

deploy/base/rbac is applied for real (ClusterRoles, the controller's bindings, the ServiceAccounts);
namespace users are bound to the built-in admin / edit / view roles, which our roles are aggregated
into by kube-controller-manager's clusterrole-aggregation controller.
"""

from __future__ import annotations

import functools
import pathlib
import uuid
from collections.abc import Iterator

import pytest

from devtools.cluster.handle import Kubectl
from tests.integration.conftest import wait_for

pytestmark = pytest.mark.cluster

ROOT = pathlib.Path(__file__).resolve().parents[2]
CONTROLLER = "system:serviceaccount:d8-inference:inference-controller"
WEBHOOK = "system:serviceaccount:d8-inference:inference-webhook"
ACTIVATOR = "system:serviceaccount:d8-inference:inference-activator"
SLICES = "endpointslices.discovery.k8s.io"
ORDERS = "inferenceservices.ai.deckhouse.io"
CLASSES = "inferenceserviceclasses.ai.deckhouse.io"
RECIPES = "inferencerecipes.ai.deckhouse.io"
# The namespace the users work in is filled in at run time.
NS = "<users>"
ALL = "<all namespaces>"


@pytest.fixture(scope="module")
def users_namespace(kubectl: Kubectl, crds: None) -> Iterator[str]:
    """RBAC of deploy/base applied; alice edits, carol admins, bob views a fresh namespace."""
    kubectl(
        "apply",
        "--server-side",
        "--force-conflicts",
        "--field-manager=test-rbac",
        "-f",
        str(ROOT / "deploy" / "base" / "platform" / "namespace.yaml"),
    )
    kubectl(
        "apply",
        "--server-side",
        "--force-conflicts",
        "--field-manager=test-rbac",
        "-k",
        str(ROOT / "deploy" / "base" / "rbac"),
    )
    kubectl(
        "apply",
        "--server-side",
        "--force-conflicts",
        "--field-manager=test-rbac",
        "-f",
        str(ROOT / "deploy" / "base" / "activator" / "rbac.yaml"),
    )
    ns = f"t-rbac-{uuid.uuid4().hex[:6]}"
    kubectl("create", "namespace", ns)
    for user, role in (("alice", "edit"), ("carol", "admin"), ("bob", "view")):
        kubectl(
            "create", "rolebinding", f"{user}-{role}", f"--clusterrole={role}", f"--user={user}", "-n", ns
        )
    # The aggregation controller folds our rules into admin / edit / view asynchronously.
    for user, verb in (("alice", "create"), ("carol", "create"), ("bob", "watch")):
        wait_for(
            functools.partial(can_i, kubectl, user, verb, ORDERS, ns),
            bool,
            timeout=60,
            message=f"{user} to be allowed to {verb} {ORDERS} through aggregation",
        )
    yield ns
    kubectl("delete", "namespace", ns, "--wait=false")


def can_i(
    kubectl: Kubectl, user: str, verb: str, resource: str, namespace: str, name: str | None = None
) -> bool:
    where = ["--all-namespaces"] if namespace == ALL else ["-n", namespace]
    if resource.endswith("/status"):
        resource = resource.removesuffix("/status")
        where.append("--subresource=status")
    target = f"{resource}/{name}" if name else resource
    res = kubectl("auth", "can-i", verb, target, f"--as={user}", *where, check=False)
    answer = res.stdout.strip()
    assert answer in ("yes", "no"), f"kubectl auth can-i: {res.stdout} {res.stderr}"
    return answer == "yes"


CASES = [
    # Namespace users: orders yes, classes and recipes never.
    ("an editor creates orders", "alice", "create", ORDERS, NS, True),
    ("an editor edits orders", "alice", "patch", ORDERS, NS, True),
    ("an editor deletes orders", "alice", "delete", ORDERS, NS, True),
    ("an editor reads the status of orders", "alice", "get", f"{ORDERS}/status", NS, True),
    ("an editor cannot write the status of orders", "alice", "patch", f"{ORDERS}/status", NS, False),
    ("an editor cannot get classes", "alice", "get", CLASSES, NS, False),
    ("an editor cannot list classes", "alice", "list", CLASSES, NS, False),
    ("an editor cannot watch classes", "alice", "watch", CLASSES, NS, False),
    ("an editor cannot get recipes", "alice", "get", RECIPES, NS, False),
    ("an editor cannot list recipes", "alice", "list", RECIPES, NS, False),
    ("an editor cannot watch recipes", "alice", "watch", RECIPES, NS, False),
    ("an editor cannot touch orders of another namespace", "alice", "get", ORDERS, "default", False),
    ("an admin creates orders", "carol", "create", ORDERS, NS, True),
    ("an admin deletes collections of orders", "carol", "deletecollection", ORDERS, NS, True),
    ("an admin cannot list classes", "carol", "list", CLASSES, NS, False),
    ("an admin cannot get recipes", "carol", "get", RECIPES, NS, False),
    ("a viewer gets orders", "bob", "get", ORDERS, NS, True),
    ("a viewer lists orders", "bob", "list", ORDERS, NS, True),
    ("a viewer watches orders", "bob", "watch", ORDERS, NS, True),
    ("a viewer reads the status of orders", "bob", "get", f"{ORDERS}/status", NS, True),
    ("a viewer cannot create orders", "bob", "create", ORDERS, NS, False),
    ("a viewer cannot delete orders", "bob", "delete", ORDERS, NS, False),
    ("a viewer cannot list classes", "bob", "list", CLASSES, NS, False),
    ("a viewer cannot watch recipes", "bob", "watch", RECIPES, NS, False),
    ("a stranger cannot get orders", "mallory", "get", ORDERS, NS, False),
    # The controller: reads everything it needs cluster-wide, writes only what it owns.
    ("the controller watches orders everywhere", CONTROLLER, "watch", ORDERS, ALL, True),
    ("the controller lists classes", CONTROLLER, "list", CLASSES, ALL, True),
    ("the controller watches recipes", CONTROLLER, "watch", RECIPES, ALL, True),
    ("the controller patches the status of orders", CONTROLLER, "patch", f"{ORDERS}/status", NS, True),
    ("the controller patches the status of classes", CONTROLLER, "patch", f"{CLASSES}/status", ALL, True),
    ("the controller cannot edit the spec of orders", CONTROLLER, "update", ORDERS, NS, False),
    ("the controller cannot patch orders", CONTROLLER, "patch", ORDERS, NS, False),
    ("the controller cannot delete orders", CONTROLLER, "delete", ORDERS, NS, False),
    ("the controller cannot create orders", CONTROLLER, "create", ORDERS, NS, False),
    ("the controller cannot edit classes", CONTROLLER, "patch", CLASSES, ALL, False),
    (
        "the controller reads catalog cluster models",
        CONTROLLER,
        "watch",
        "clustermodels.ai.deckhouse.io",
        ALL,
        True,
    ),
    ("the controller reads catalog models", CONTROLLER, "list", "models.ai.deckhouse.io", ALL, True),
    ("the controller watches secrets", CONTROLLER, "watch", "secrets", ALL, True),
    ("the controller creates auth secrets", CONTROLLER, "create", "secrets", NS, True),
    ("the controller cannot delete secrets", CONTROLLER, "delete", "secrets", NS, False),
    ("the controller cannot update secrets", CONTROLLER, "update", "secrets", NS, False),
    ("the controller applies deployments", CONTROLLER, "patch", "deployments.apps", NS, True),
    ("the controller creates deployments", CONTROLLER, "create", "deployments.apps", NS, True),
    (
        "the controller deletes a deployment a multi-node plan replaced",
        CONTROLLER,
        "delete",
        "deployments.apps",
        NS,
        True,
    ),
    (
        "the controller applies leader worker sets",
        CONTROLLER,
        "patch",
        "leaderworkersets.leaderworkerset.x-k8s.io",
        NS,
        True,
    ),
    (
        "the controller watches leader worker sets",
        CONTROLLER,
        "watch",
        "leaderworkersets.leaderworkerset.x-k8s.io",
        ALL,
        True,
    ),
    (
        "the controller deletes a leader worker set a single-node plan replaced",
        CONTROLLER,
        "delete",
        "leaderworkersets.leaderworkerset.x-k8s.io",
        NS,
        True,
    ),
    (
        "the controller deletes the autoscaler of a replaced deployment",
        CONTROLLER,
        "delete",
        "scaledobjects.keda.sh",
        NS,
        True,
    ),
    (
        "the controller deletes its own hpa of before keda",
        CONTROLLER,
        "delete",
        "horizontalpodautoscalers.autoscaling",
        NS,
        True,
    ),
    (
        "the controller reads kedas hpas",
        CONTROLLER,
        "watch",
        "horizontalpodautoscalers.autoscaling",
        NS,
        True,
    ),
    ("the controller applies services", CONTROLLER, "patch", "services", NS, True),
    ("the controller applies model volumes", CONTROLLER, "patch", "persistentvolumeclaims", NS, True),
    (
        "the controller deletes model volumes of earlier plans",
        CONTROLLER,
        "delete",
        "persistentvolumeclaims",
        NS,
        True,
    ),
    (
        "the controller applies autoscalers",
        CONTROLLER,
        "patch",
        "scaledobjects.keda.sh",
        NS,
        True,
    ),
    (
        "the controller never writes an hpa (keda does)",
        CONTROLLER,
        "patch",
        "horizontalpodautoscalers.autoscaling",
        NS,
        False,
    ),
    ("the controller applies certificates", CONTROLLER, "patch", "certificates.cert-manager.io", NS, True),
    ("the controller applies ingresses", CONTROLLER, "patch", "ingresses.networking.k8s.io", NS, True),
    (
        "the controller deletes ingresses it stopped wanting",
        CONTROLLER,
        "delete",
        "ingresses.networking.k8s.io",
        NS,
        True,
    ),
    (
        "the controller applies group NetworkPolicies",
        CONTROLLER,
        "patch",
        "networkpolicies.networking.k8s.io",
        NS,
        True,
    ),
    (
        "the controller deletes NetworkPolicies of groups it stopped running",
        CONTROLLER,
        "delete",
        "networkpolicies.networking.k8s.io",
        NS,
        True,
    ),
    (
        "the controller applies claim templates",
        CONTROLLER,
        "patch",
        "resourceclaimtemplates.resource.k8s.io",
        NS,
        True,
    ),
    (
        "the controller deletes old claim templates",
        CONTROLLER,
        "delete",
        "resourceclaimtemplates.resource.k8s.io",
        NS,
        True,
    ),
    (
        "the controller watches resource slices",
        CONTROLLER,
        "watch",
        "resourceslices.resource.k8s.io",
        ALL,
        True,
    ),
    (
        "the controller watches namespaces (labels, for namespaceSelector)",
        CONTROLLER,
        "watch",
        "namespaces",
        ALL,
        True,
    ),
    ("the controller cannot label namespaces", CONTROLLER, "patch", "namespaces", ALL, False),
    (
        "the controller watches device classes",
        CONTROLLER,
        "watch",
        "deviceclasses.resource.k8s.io",
        ALL,
        True,
    ),
    (
        "the controller watches resource claims",
        CONTROLLER,
        "watch",
        "resourceclaims.resource.k8s.io",
        ALL,
        True,
    ),
    (
        "the controller cannot create resource claims",
        CONTROLLER,
        "create",
        "resourceclaims.resource.k8s.io",
        NS,
        False,
    ),
    (
        "the controller cannot write resource slices",
        CONTROLLER,
        "patch",
        "resourceslices.resource.k8s.io",
        ALL,
        False,
    ),
    ("the controller watches pods", CONTROLLER, "watch", "pods", ALL, True),
    ("the controller cannot create pods", CONTROLLER, "create", "pods", NS, False),
    ("the controller reads a replica set by name", CONTROLLER, "get", "replicasets.apps", NS, True),
    ("the controller reads a stateful set by name", CONTROLLER, "get", "statefulsets.apps", NS, True),
    ("the controller cannot list replica sets", CONTROLLER, "list", "replicasets.apps", ALL, False),
    ("the controller cannot patch stateful sets", CONTROLLER, "patch", "statefulsets.apps", NS, False),
    ("the controller records events", CONTROLLER, "create", "events.events.k8s.io", NS, True),
    (
        "the controller creates its lease",
        CONTROLLER,
        "create",
        "leases.coordination.k8s.io",
        "d8-inference",
        True,
    ),
    (
        "the controller renews its lease",
        CONTROLLER,
        "update",
        "leases.coordination.k8s.io/inference-controller",
        "d8-inference",
        True,
    ),
    (
        "the controller cannot update other leases",
        CONTROLLER,
        "update",
        "leases.coordination.k8s.io/kube-scheduler",
        "d8-inference",
        False,
    ),
    ("the controller has no lease elsewhere", CONTROLLER, "create", "leases.coordination.k8s.io", NS, False),
    (
        "the controller reads its settings",
        CONTROLLER,
        "get",
        "configmaps/inference-settings",
        "d8-inference",
        True,
    ),
    ("the controller cannot list configmaps", CONTROLLER, "list", "configmaps", "d8-inference", False),
    (
        "the controller reads and patches its facts store",
        CONTROLLER,
        "patch",
        "configmaps/inference-model-facts",
        "d8-inference",
        True,
    ),
    (
        "the controller cannot read other configmaps",
        CONTROLLER,
        "get",
        "configmaps/other",
        "d8-inference",
        False,
    ),
    ("the controller cannot read nodes", CONTROLLER, "list", "nodes", ALL, False),
    ("the controller cannot grant itself roles", CONTROLLER, "create", "clusterrolebindings", ALL, False),
    # The webhook answers from the request alone: no API rights at all.
    # Scale to zero: the order's `<order>-activator` slice, and the activator's own slices.
    ("the controller applies an order's activator slice", CONTROLLER, "patch", SLICES, NS, True),
    ("the controller deletes an order's activator slice", CONTROLLER, "delete", SLICES, NS, True),
    ("the controller watches the activator's slices", CONTROLLER, "watch", SLICES, "d8-inference", True),
    ("the activator watches secrets everywhere", ACTIVATOR, "watch", "secrets", ALL, True),
    ("the activator watches endpointslices everywhere", ACTIVATOR, "watch", SLICES, ALL, True),
    ("the activator cannot create secrets", ACTIVATOR, "create", "secrets", NS, False),
    ("the activator cannot patch endpointslices", ACTIVATOR, "patch", SLICES, NS, False),
    ("the activator cannot patch deployments", ACTIVATOR, "patch", "deployments.apps", NS, False),
    ("the activator cannot read pods", ACTIVATOR, "get", "pods", NS, False),
    ("the activator cannot read orders", ACTIVATOR, "get", ORDERS, NS, False),
    ("the webhook cannot read orders", WEBHOOK, "get", ORDERS, NS, False),
    ("the webhook cannot list classes", WEBHOOK, "list", CLASSES, ALL, False),
    ("the webhook cannot read secrets", WEBHOOK, "get", "secrets", "d8-inference", False),
    ("the webhook cannot read configmaps", WEBHOOK, "get", "configmaps", "d8-inference", False),
    ("the webhook cannot record events", WEBHOOK, "create", "events", "d8-inference", False),
]


@pytest.mark.parametrize(
    ("who", "verb", "resource", "namespace", "allowed"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_can_i(
    kubectl: Kubectl, users_namespace: str, who: str, verb: str, resource: str, namespace: str, allowed: bool
) -> None:
    ns = users_namespace if namespace == NS else namespace
    name = None
    if "/" in resource and not resource.endswith("/status"):
        resource, name = resource.split("/", 1)
    assert can_i(kubectl, who, verb, resource, ns, name) is allowed


def resource_rules(listing: str) -> set[tuple[str, ...]]:
    """The rows of ``kubectl auth can-i --list`` that grant resources (non-resource rows start blank)."""
    return {tuple(line.split()) for line in listing.splitlines()[1:] if line and not line[0].isspace()}


def test_the_webhook_service_account_holds_no_rule_beyond_what_every_service_account_has(
    kubectl: Kubectl, users_namespace: str
) -> None:
    listed = resource_rules(
        kubectl("auth", "can-i", "--list", f"--as={WEBHOOK}", "-n", "d8-inference").stdout
    )
    anyone = f"system:serviceaccount:{users_namespace}:nobody"
    baseline = resource_rules(
        kubectl("auth", "can-i", "--list", f"--as={anyone}", "-n", "d8-inference").stdout
    )
    assert any(row[0].startswith("selfsubject") for row in listed), "the listing parsed"
    assert listed <= baseline, f"rules only the webhook has: {listed - baseline}"
