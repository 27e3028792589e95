"""The one table of kinds the controller watches. Everything else reads from it. Pure.

Each entry says where the kind lives, which objects of it are cached (a label selector), how an
event on one of them maps to reconcile keys (``Fanout``), whether the order owns objects of it
(and so whether the controller prunes the ones a plan no longer wants), and whether its API may be
missing (cert-manager, the catalog) without holding the start, and what the informer keeps of each
object (``transform``, ``controller.caching.slim``).

Adding an owned kind is one new row here; ``Cache`` names the caches, so a misspelt cache is a
type error, and ``store.Store`` raises on a cache that is not watched.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from controller.caching import slim
from shared import names


class Cache(enum.StrEnum):
    ORDERS = "orders"
    CLASSES = "classes"
    RECIPES = "recipes"
    SECRETS = "secrets"
    DEPLOYMENTS = "deployments"
    LEADER_WORKER_SETS = "leaderworkersets"
    SERVICES = "services"
    ENDPOINT_SLICES = "endpointslices"
    ACTIVATOR_SLICES = "activatorslices"
    PVCS = "pvcs"
    PODS = "pods"
    HPAS = "hpas"
    SCALED_OBJECTS = "scaledobjects"
    INGRESSES = "ingresses"
    NETWORK_POLICIES = "networkpolicies"
    CERTIFICATES = "certificates"
    CLAIM_TEMPLATES = "claimtemplates"
    DEVICE_CLASSES = "deviceclasses"
    RESOURCE_SLICES = "resourceslices"
    RESOURCE_CLAIMS = "resourceclaims"
    MODELS = "models"
    CLUSTER_MODELS = "clustermodels"
    PRIORITY_CLASSES = "priorityclasses"
    NAMESPACES = "namespaces"


class Fanout(enum.Enum):
    """How an event on an object of the kind maps to reconcile keys (``wiring.keys_for``)."""

    SELF = "the order itself"
    CLASS = "the class and every order of it"
    EVERYTHING = "every class and every order"
    OWNER_LABEL = "the order named in the object's order label"
    CAPACITY = "the orders waiting for capacity, by priority then age (and the ledger)"
    CATALOG = "the orders that reference the catalog model"
    NAMESPACE = "the orders in the namespace (its labels decide which classes it may use)"
    NONE = "nobody (read when ranking waiting orders)"


@dataclass(frozen=True, slots=True)
class WatchedKind:
    cache: Cache
    api_version: str
    kind: str
    fanout: Fanout
    label_selector: str | None = None
    owned: bool = False  # the order owns objects of this kind (named after it, ownerReference)
    pruned: bool = False  # owned objects a new plan no longer wants are deleted by the controller
    optional: bool = False  # the API may be absent; the start does not wait for this cache
    catalog: bool = False  # watched only while catalog integration is on
    transform: slim.Transform = slim.whole  # what the informer keeps of an object (cache and handler)
    module_namespace: bool = False  # watched in the controller's own namespace only


_ORDER = names.LABEL_ORDER

KINDS: tuple[WatchedKind, ...] = (
    WatchedKind(Cache.ORDERS, "ai.deckhouse.io/v1alpha1", "InferenceService", Fanout.SELF),
    WatchedKind(Cache.CLASSES, "ai.deckhouse.io/v1alpha1", "InferenceServiceClass", Fanout.CLASS),
    WatchedKind(Cache.RECIPES, "ai.deckhouse.io/v1alpha1", "InferenceRecipe", Fanout.EVERYTHING),
    # Only the Secrets the controller creates or adopts carry the order label: the user's Hub token
    # Secret is read by name when a model is resolved, never cached.
    WatchedKind(Cache.SECRETS, "v1", "Secret", Fanout.OWNER_LABEL, _ORDER, owned=True, transform=slim.secret),
    # A plan is either single-node (a Deployment with its ScaledObject) or multi-node (a LeaderWorkerSet):
    # moving between them prunes the kind the new plan no longer wants.
    WatchedKind(
        Cache.DEPLOYMENTS, "apps/v1", "Deployment", Fanout.OWNER_LABEL, _ORDER, owned=True, pruned=True
    ),
    WatchedKind(
        Cache.LEADER_WORKER_SETS,
        "leaderworkerset.x-k8s.io/v1",
        "LeaderWorkerSet",
        Fanout.OWNER_LABEL,
        _ORDER,
        owned=True,
        pruned=True,
        optional=True,
    ),
    WatchedKind(Cache.SERVICES, "v1", "Service", Fanout.OWNER_LABEL, _ORDER, owned=True),
    # The order's ``<order>-activator`` slice (scale to zero) is owned and pruned once unwanted. The
    # EndpointSlice controller's slices of the order's Service carry the order label too (it copies
    # the Service's labels); they are owned by the Service, never by the order, so never pruned.
    WatchedKind(
        Cache.ENDPOINT_SLICES,
        "discovery.k8s.io/v1",
        "EndpointSlice",
        Fanout.OWNER_LABEL,
        _ORDER,
        owned=True,
        pruned=True,
    ),
    # The activator's own Service's slices, in the module's namespace only (a tenant's slice that
    # borrows the label elsewhere is never read): their ready addresses go into every order's
    # ``<order>-activator`` slice, so a change reconciles every order (rare: the activator's pods).
    WatchedKind(
        Cache.ACTIVATOR_SLICES,
        "discovery.k8s.io/v1",
        "EndpointSlice",
        Fanout.EVERYTHING,
        f"{names.SERVICE_NAME_LABEL}={names.ACTIVATOR_SERVICE}",
        module_namespace=True,
    ),
    WatchedKind(
        Cache.PVCS, "v1", "PersistentVolumeClaim", Fanout.OWNER_LABEL, _ORDER, owned=True, pruned=True
    ),
    WatchedKind(Cache.PODS, "v1", "Pod", Fanout.OWNER_LABEL, _ORDER, transform=slim.pod),
    # Read only: KEDA's HPA ``keda-hpa-<order>`` (it copies the ScaledObject's labels) says how many
    # replicas the autoscaler wants (ScalingHealthy). The controller renders no HPA any more: one
    # it applied before KEDA (``<order>``, owned by the order) is unwanted, so pruned once.
    WatchedKind(
        Cache.HPAS,
        "autoscaling/v2",
        "HorizontalPodAutoscaler",
        Fanout.OWNER_LABEL,
        _ORDER,
        owned=True,
        pruned=True,
    ),
    # The order's KEDA ScaledObject (single-node plans); optional: KEDA may be missing.
    WatchedKind(
        Cache.SCALED_OBJECTS,
        "keda.sh/v1alpha1",
        "ScaledObject",
        Fanout.OWNER_LABEL,
        _ORDER,
        owned=True,
        pruned=True,
        optional=True,
    ),
    WatchedKind(
        Cache.INGRESSES,
        "networking.k8s.io/v1",
        "Ingress",
        Fanout.OWNER_LABEL,
        _ORDER,
        owned=True,
        pruned=True,
    ),
    # One per group of a multi-node plan (``controller.render.ray``): Ray's ports for the group only.
    WatchedKind(
        Cache.NETWORK_POLICIES,
        "networking.k8s.io/v1",
        "NetworkPolicy",
        Fanout.OWNER_LABEL,
        _ORDER,
        owned=True,
        pruned=True,
    ),
    WatchedKind(
        Cache.CERTIFICATES,
        "cert-manager.io/v1",
        "Certificate",
        Fanout.OWNER_LABEL,
        _ORDER,
        owned=True,
        optional=True,
    ),
    WatchedKind(
        Cache.CLAIM_TEMPLATES,
        "resource.k8s.io/v1",
        "ResourceClaimTemplate",
        Fanout.OWNER_LABEL,
        _ORDER,
        owned=True,
        pruned=True,
    ),
    WatchedKind(Cache.DEVICE_CLASSES, "resource.k8s.io/v1", "DeviceClass", Fanout.EVERYTHING),
    WatchedKind(Cache.RESOURCE_SLICES, "resource.k8s.io/v1", "ResourceSlice", Fanout.CAPACITY),
    WatchedKind(
        Cache.RESOURCE_CLAIMS,
        "resource.k8s.io/v1",
        "ResourceClaim",
        Fanout.CAPACITY,
        transform=slim.resource_claim,
    ),
    WatchedKind(Cache.PRIORITY_CLASSES, "scheduling.k8s.io/v1", "PriorityClass", Fanout.NONE, optional=True),
    # Only name and labels: a class's ``namespaceSelector`` is judged against them.
    WatchedKind(Cache.NAMESPACES, "v1", "Namespace", Fanout.NAMESPACE, transform=slim.namespace),
    WatchedKind(
        Cache.MODELS, "ai.deckhouse.io/v1alpha1", "Model", Fanout.CATALOG, optional=True, catalog=True
    ),
    WatchedKind(
        Cache.CLUSTER_MODELS,
        "ai.deckhouse.io/v1alpha1",
        "ClusterModel",
        Fanout.CATALOG,
        optional=True,
        catalog=True,
    ),
)

BY_CACHE: dict[Cache, WatchedKind] = {k.cache: k for k in KINDS}
OWNED: tuple[WatchedKind, ...] = tuple(k for k in KINDS if k.owned)
# A kind watched twice (EndpointSlice: the orders' and the activator's) maps to its owned entry.
BY_KIND: dict[str, WatchedKind] = {
    k.kind: k for k in KINDS if k.owned or k.kind not in {o.kind for o in OWNED}
}
PRUNED: tuple[WatchedKind, ...] = tuple(k for k in KINDS if k.pruned)


def watched(*, catalog_enabled: bool) -> tuple[WatchedKind, ...]:
    """The kinds this process watches under its module settings."""
    return tuple(k for k in KINDS if catalog_enabled or not k.catalog)


def cache_of(kind: str) -> Cache | None:
    """The cache holding live objects of an owned kind, for the apply's no-op check and drift."""
    entry = BY_KIND.get(kind)
    return entry.cache if entry is not None and entry.owned else None
