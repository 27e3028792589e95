"""Which order an SNI name belongs to, its token and its served model name.

An endpoint host names its order: ``<name>.<namespace>.svc`` (or ``.svc.cluster.local``) for
ClusterLocal endpoints; any other host (External) is matched against the orders'
``status.endpoint.url``. Given a kubeconfig, the stand-in reads through the Kubernetes API:

- the token: Secret ``<name>-auth`` in the order's namespace, key ``token``; no such Secret means
  the order needs no token;
- the served model name: the InferenceService's ``spec.model.ref.name``;
- whether its runtime would start: the Deployment ``<name>``'s ``runtime`` container args checked
  against the flags ``vllm serve`` of the image's version accepts (``standins.runtime.vllm_flags``);
  for a multi-node order, the args of the leader's ``runtime`` container in the LeaderWorkerSet
  ``<name>-group`` (the leader is the pod that runs ``vllm serve`` and that the Service selects).
  A refused order answers 503 with vLLM's error, as a runtime that exits at start never serves;
- the serving certificate: Secret ``<name>-tls`` (type ``kubernetes.io/tls``, what cert-manager
  writes for the order's Certificate) when it exists (``standins.runtime.endpoint_tls``);
- the order's ready pods (``ready_pods``): the pods labelled ``ai.deckhouse.io/inference-service=<name>``
  (``shared.names.LABEL_ORDER``) in its namespace whose ``Ready`` condition is ``True`` and that are
  not being deleted: the replicas the load model spreads the order's requests over
  (``standins.runtime.load``); and the order a pod belongs to (``order_of_pod``), by the same label.
  Of a multi-node order only the leaders (LeaderWorkerSet worker index ``0``, the pods the Service
  selects and that run ``vllm serve``) are replicas: a worker runs no API server and publishes no
  vLLM metrics, so it belongs to no replica here.

- the order's EndpointSlices (``service_slices``): those labelled with the order (the label the
  activator lists its upstreams by), read as ``ServiceSlices``: the ready ``address:port`` of the
  activator's slice (managed by the controller, ``ACTIVATOR_SLICE_MANAGER``, for the order's Service:
  the order is at zero) and whether a slice of Kubernetes' EndpointSlice controller has a ready
  endpoint (the order has a ready replica: exactly what makes the activator forward).

Lookups are cached for ``ttl`` seconds (``service_slices(fresh=True)`` reads anew). Orders, and an
order's ready pods, can also be registered by hand through the control port (tests without a
cluster); a registration wins over the API. ``set_slice_source`` replaces the API as the source of
EndpointSlices (tests without a cluster).
"""

from __future__ import annotations

import base64
import json
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.client.exceptions import ApiException

from shared import names
from shared.names import LABEL_ORDER
from standins.runtime.endpoint_tls import TlsPair, tls_pair
from standins.runtime.vllm_flags import refusal

GROUP, VERSION, PLURAL = "ai.deckhouse.io", "v1alpha1", "inferenceservices"
LWS_GROUP, LWS_VERSION, LWS_PLURAL = "leaderworkerset.x-k8s.io", "v1", "leaderworkersets"
_SVC_SUFFIXES = (".svc.cluster.local", ".svc")
LWS_WORKER_INDEX_LABEL = "leaderworkerset.sigs.k8s.io/worker-index"  # "0": the group's leader
SLICE_MANAGED_BY = names.SLICE_MANAGER_LABEL
SLICE_SERVICE_NAME = names.SERVICE_NAME_LABEL
ACTIVATOR_SLICE_MANAGER = names.ACTIVATOR_SLICE_MANAGER
"""The manager of the slice ``<order>-activator`` the controller writes while an order of a class with
``minReplicas: 0`` has no ready replica: the order's Service then also leads to the activator."""
KUBE_SLICE_MANAGER = "endpointslice-controller.k8s.io"
ACTIVATOR_PORT_NAME = "https"

SliceSource = Callable[["OrderKey"], list[Mapping[str, Any]]]
"""The order's EndpointSlices (JSON objects) labelled with the order."""


@dataclass(frozen=True, slots=True)
class OrderKey:
    namespace: str
    name: str


@dataclass(frozen=True, slots=True)
class OrderView:
    """What the stand-in needs to answer for one order."""

    key: OrderKey
    token: str | None  # None: no token required
    model: str | None  # None: unknown order
    refused: str | None = None  # why the runtime would not start (an unknown flag), else None
    tls: TlsPair | None = None  # the <order>-tls Secret's pair; None: not issued (no handshake)
    guarded: bool = False  # the runtime loads the token guard (every route but GET /health needs the token)


VLLM_GUARDED_PREFIXES = ("/v1", "/v2", "/inference", "/cohere")
"""The paths real vLLM checks ``VLLM_API_KEY`` on (0.32: vllm/entrypoints/serve/middleware/authenticate.py;
a plain prefix test, OPTIONS exempt). The stand-in is never stricter than the real runtime."""
GUARD_MIDDLEWARE = "inference_token_guard.TokenGuard"
"""What ``controller.render.pod`` passes to ``--middleware`` for an order with a token."""


@dataclass(frozen=True, slots=True)
class ServiceSlices:
    """What the order's EndpointSlices say about where its Service leads."""

    activator: tuple[str, ...] = ()  # HOST:PORT of the activator's ready endpoints (the order is at zero)
    own_ready: bool = False  # a slice of Kubernetes' EndpointSlice controller has a ready endpoint


def _endpoint_ready(endpoint: Mapping[str, Any]) -> bool:
    conditions = endpoint.get("conditions")
    conditions = conditions if isinstance(conditions, Mapping) else {}
    return conditions.get("ready") is not False and conditions.get("terminating") is not True


def service_slices(name: str, items: list[Mapping[str, Any]]) -> ServiceSlices:
    """Read the EndpointSlices labelled with order ``name``. Pure.

    - The activator's: managed by ``ACTIVATOR_SLICE_MANAGER`` and for the order's Service
      (``kubernetes.io/service-name: <name>``, what kube-proxy goes by); the first address of each
      ready endpoint (``conditions.ready`` unset counts as ready, as the API says; a terminating one
      does not) on its port named ``https`` (else its only port).
    - The order's own: managed by ``KUBE_SLICE_MANAGER`` with a ready endpoint, whichever Service
      (the activator forwards on the same slices, by the same label).
    """
    activator: list[str] = []
    own_ready = False
    for item in items:
        meta = item.get("metadata")
        labels = meta.get("labels") if isinstance(meta, Mapping) else None
        labels = labels if isinstance(labels, Mapping) else {}
        endpoints = [e for e in item.get("endpoints") or () if isinstance(e, Mapping) and _endpoint_ready(e)]
        manager = labels.get(SLICE_MANAGED_BY)
        if manager == KUBE_SLICE_MANAGER:
            own_ready = own_ready or bool(endpoints)
        elif manager == ACTIVATOR_SLICE_MANAGER and labels.get(SLICE_SERVICE_NAME) == name:
            port = _https_port(item.get("ports"))
            ipv6 = item.get("addressType") == "IPv6"
            for endpoint in endpoints if port else ():
                for address in (endpoint.get("addresses") or ())[:1]:
                    if isinstance(address, str) and address:
                        activator.append(f"[{address}]:{port}" if ipv6 else f"{address}:{port}")
    return ServiceSlices(tuple(activator), own_ready)


def _https_port(ports: Any) -> int | None:
    numbered = [p for p in ports or () if isinstance(p, Mapping) and isinstance(p.get("port"), int)]
    for p in numbered:
        if p.get("name") == ACTIVATOR_PORT_NAME:
            return int(p["port"])
    return int(numbered[0]["port"]) if len(numbered) == 1 else None


def needs_token(method: str, path: str, *, guarded: bool) -> bool:
    """Whether the runtime answers 401 without the token: with the token guard, everything but
    ``GET /health`` and ``OPTIONS``; without it, vLLM's own rule."""
    if guarded:
        return (method, path) != ("GET", "/health") and method != "OPTIONS"
    return method != "OPTIONS" and path.startswith(VLLM_GUARDED_PREFIXES)


def is_guarded(args: list[str]) -> bool:
    """Whether runtime ``args`` load the token guard (``--middleware X`` or ``--middleware=X``)."""
    for i, arg in enumerate(args):
        if arg in ("--middleware", "--middleware=" + GUARD_MIDDLEWARE) and (
            arg != "--middleware" or args[i + 1 : i + 2] == [GUARD_MIDDLEWARE]
        ):
            return True
    return False


def serves(pod: Any) -> bool:
    """Whether a pod (the client's V1Pod) runs the order's API server: any pod of a single-node
    order, the leader of a multi-node group."""
    return ((pod.metadata.labels or {}).get(LWS_WORKER_INDEX_LABEL) or "0") == "0"


def pod_is_ready(pod: Any) -> bool:
    """A pod (the client's V1Pod) counts as a ready replica: it serves, its condition ``Ready`` is
    ``True`` and it has no deletion timestamp (a pod being deleted gets no new request)."""
    if pod.metadata.deletion_timestamp is not None or not serves(pod):
        return False
    conditions = (pod.status.conditions if pod.status is not None else None) or []
    return any(c.type == "Ready" and c.status == "True" for c in conditions)


def order_key_for_host(host: str) -> OrderKey | None:
    """``<name>.<namespace>.svc[.cluster.local]`` -> the order; other hosts -> None."""
    host = host.lower().rstrip(".")
    for suffix in _SVC_SUFFIXES:
        if host.endswith(suffix):
            parts = host.removesuffix(suffix).split(".")
            if len(parts) == 2 and all(parts):
                return OrderKey(namespace=parts[1], name=parts[0])
    return None


class OrderDirectory:
    """Resolves hosts to ``OrderView``s from registrations and, when configured, the Kubernetes API."""

    def __init__(
        self, *, kubeconfig: str | None = None, ttl: float = 2.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        new_client: Any = k8s_config.new_client_from_config
        self._api: Any = new_client(config_file=kubeconfig) if kubeconfig else None
        self._ttl = ttl
        self._clock = clock
        self._lock = threading.Lock()
        self._registered: dict[OrderKey, OrderView] = {}
        self._cache: dict[str, tuple[float, OrderView | None]] = {}
        self._registered_pods: dict[OrderKey, list[str]] = {}
        self._pods_cache: dict[OrderKey, tuple[float, list[str]]] = {}
        self._pod_orders: dict[tuple[str, str], tuple[float, OrderKey | None]] = {}
        self._slices_cache: dict[OrderKey, tuple[float, ServiceSlices]] = {}
        self._slice_source: SliceSource | None = self._api_slices if self._api is not None else None

    @property
    def reads_slices(self) -> bool:
        """Whether the orders' EndpointSlices can be read (a kubeconfig, or a source set by hand)."""
        return self._slice_source is not None

    def set_slice_source(self, source: SliceSource | None) -> None:
        """Read the orders' EndpointSlices from ``source`` instead of the API (None: none), for
        tests without a cluster; the cache is dropped."""
        with self._lock:
            self._slice_source = source
            self._slices_cache.clear()

    def service_slices(self, key: OrderKey, *, fresh: bool = False) -> ServiceSlices:
        """What the order's EndpointSlices say (``service_slices``), cached for ``ttl`` seconds;
        ``fresh``: read anew (and cache that). Nothing (no activator, no ready replica) without a
        source, or while the API cannot be read: the stand-in then routes as before slices counted."""
        with self._lock:
            source = self._slice_source
            cached = self._slices_cache.get(key)
            if not fresh and cached is not None and cached[0] > self._clock():
                return cached[1]
        if source is None:
            return ServiceSlices()
        try:
            view = service_slices(key.name, source(key))
        except Exception:  # the API cannot be read (urllib3's errors are no OSError)
            return ServiceSlices()
        with self._lock:
            self._slices_cache[key] = (self._clock() + self._ttl, view)
        return view

    def _api_slices(self, key: OrderKey) -> list[Mapping[str, Any]]:
        discovery: Any = k8s.DiscoveryV1Api(self._api)
        resp = discovery.list_namespaced_endpoint_slice(
            key.namespace, label_selector=f"{LABEL_ORDER}={key.name}", _preload_content=False
        )
        items = json.loads(resp.data).get("items") or []
        return [i for i in items if isinstance(i, Mapping)]

    def close(self) -> None:
        if self._api is not None:
            self._api.close()

    def register(
        self,
        key: OrderKey,
        *,
        token: str | None,
        model: str,
        tls: TlsPair | None = None,
        guarded: bool = False,
    ) -> None:
        with self._lock:
            self._registered[key] = OrderView(key, token, model, tls=tls, guarded=guarded)

    def unregister(self, key: OrderKey) -> None:
        with self._lock:
            self._registered.pop(key, None)

    def register_pods(self, key: OrderKey, pods: list[str]) -> None:
        """The order's ready pods, by hand (wins over the API)."""
        with self._lock:
            self._registered_pods[key] = list(pods)

    def unregister_pods(self, key: OrderKey) -> None:
        with self._lock:
            self._registered_pods.pop(key, None)

    def ready_pods(self, key: OrderKey) -> list[str]:
        """The names of the order's pods that are Ready and not being deleted, sorted; ``[]`` without
        a kubeconfig or registration, and while the API cannot be read (the stand-in then answers
        on the order's implicit replica, as before pods were modelled)."""
        with self._lock:
            if key in self._registered_pods:
                return list(self._registered_pods[key])
            cached = self._pods_cache.get(key)
            if cached is not None and cached[0] > self._clock():
                return list(cached[1])
        pods: list[str] = []
        if self._api is not None:
            core: Any = k8s.CoreV1Api(self._api)
            try:
                listed = core.list_namespaced_pod(key.namespace, label_selector=f"{LABEL_ORDER}={key.name}")
                pods = sorted(p.metadata.name for p in listed.items if pod_is_ready(p))
            except Exception:  # the API cannot be read (urllib3's errors are no OSError): implicit replica
                pods = []
        with self._lock:
            self._pods_cache[key] = (self._clock() + self._ttl, pods)
        return list(pods)

    def order_of_pod(self, namespace: str, pod: str) -> OrderKey | None:
        """The order the pod is a replica of (its order label; or a registration naming it); None
        for a pod that does not exist, carries no order label, or is a multi-node group's worker.
        Raises the API's error when it cannot be read (the caller cannot tell)."""
        with self._lock:
            for registered, pods in self._registered_pods.items():
                if registered.namespace == namespace and pod in pods:
                    return registered
            cached = self._pod_orders.get((namespace, pod))
            if cached is not None and cached[0] > self._clock():
                return cached[1]
        key: OrderKey | None = None
        if self._api is not None:
            core: Any = k8s.CoreV1Api(self._api)
            try:
                found = core.read_namespaced_pod(pod, namespace)
            except ApiException as e:
                if e.status != 404:
                    raise
                found = None
            serving = found is not None and serves(found)
            order = (found.metadata.labels or {}).get(LABEL_ORDER) if serving else None
            key = OrderKey(namespace, order) if order else None
        with self._lock:
            self._pod_orders[(namespace, pod)] = (self._clock() + self._ttl, key)
        return key

    def lookup(self, host: str) -> OrderView | None:
        """The order behind ``host``; None when no order is known for it."""
        key = order_key_for_host(host)
        with self._lock:
            if key is not None and key in self._registered:
                return self._registered[key]
            cached = self._cache.get(host)
            if cached is not None and cached[0] > self._clock():
                return cached[1]
        view = self._read(host, key)
        with self._lock:
            self._cache[host] = (self._clock() + self._ttl, view)
        return view

    def _read(self, host: str, key: OrderKey | None) -> OrderView | None:
        if self._api is None:
            return None
        objects: Any = k8s.CustomObjectsApi(self._api)
        order: dict[str, Any] | None = None
        if key is None:
            listing = objects.list_cluster_custom_object(GROUP, VERSION, PLURAL)
            for item in listing.get("items", []):
                url = ((item.get("status") or {}).get("endpoint") or {}).get("url") or ""
                if urlsplit(url).hostname == host.lower():
                    order = item
                    key = OrderKey(item["metadata"]["namespace"], item["metadata"]["name"])
                    break
            if order is None or key is None:
                return None
        else:
            try:
                order = objects.get_namespaced_custom_object(GROUP, VERSION, key.namespace, PLURAL, key.name)
            except ApiException as e:
                if e.status != 404:
                    raise
                order = None
        model = (((order or {}).get("spec") or {}).get("model") or {}).get("ref", {}).get("name")
        runtime = self._runtime(key)
        refused = refusal(*runtime) if runtime is not None else None
        guarded = runtime is not None and is_guarded(runtime[1])
        return OrderView(key, self._token(key), model, refused, self._tls(key), guarded)

    def _runtime(self, key: OrderKey) -> tuple[str, list[str]] | None:
        """The image and args of the order's runtime container; None without a Deployment (or
        LeaderWorkerSet) or runtime container. ``refusal`` gives vLLM's refusal of them."""
        apps: Any = k8s.AppsV1Api(self._api)
        try:
            dep = apps.read_namespaced_deployment(key.name, key.namespace)
        except ApiException as e:
            if e.status == 404:
                return self._group_runtime(key)
            raise
        for c in dep.spec.template.spec.containers or []:
            if c.name == "runtime":
                return c.image or "", list(c.args or [])
        return None

    def _group_runtime(self, key: OrderKey) -> tuple[str, list[str]] | None:
        """The same on the leader template of the order's LeaderWorkerSet, when it has one."""
        objects: Any = k8s.CustomObjectsApi(self._api)
        try:
            lws = objects.get_namespaced_custom_object(
                LWS_GROUP, LWS_VERSION, key.namespace, LWS_PLURAL, f"{key.name}-group"
            )
        except ApiException as e:
            if e.status == 404:
                return None
            raise
        template = ((lws.get("spec") or {}).get("leaderWorkerTemplate") or {}).get("leaderTemplate") or {}
        for c in (template.get("spec") or {}).get("containers") or []:
            if c.get("name") == "runtime":
                return c.get("image") or "", list(c.get("args") or [])
        return None

    def _secret(self, key: OrderKey, suffix: str) -> Any:
        """The order's ``<name>-<suffix>`` Secret, None when it does not exist."""
        core: Any = k8s.CoreV1Api(self._api)
        try:
            return core.read_namespaced_secret(f"{key.name}-{suffix}", key.namespace)
        except ApiException as e:
            if e.status == 404:
                return None
            raise

    def _tls(self, key: OrderKey) -> TlsPair | None:
        secret = self._secret(key, "tls")
        return None if secret is None else tls_pair(secret.type, secret.data)

    def _token(self, key: OrderKey) -> str | None:
        secret = self._secret(key, "auth")
        raw = (secret.data or {}).get("token") if secret is not None else None
        return base64.b64decode(raw).decode().strip() if raw else None
