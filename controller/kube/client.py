"""The API client, the registry of the kinds the controller touches, and one raw-JSON request function.

``load_api_client`` builds a ``kubernetes.client.ApiClient`` (in-cluster, or from a kubeconfig) without
touching the library's global default configuration. ``request`` sends one HTTP request through that
client's connection pool and auth settings, so every other module speaks plain dicts and typed errors
(``controller.kube.errors``) and never the generated models.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode

import urllib3
from kubernetes import client as k8s
from kubernetes import config as k8s_config

from controller.kube import jsondecode
from controller.kube.errors import ApiUnavailable, error_from_response

ApiClient = Any  # kubernetes.client.ApiClient; the library ships no type information

# Enough for one watch per informer (about twenty) plus the workers' requests.
POOL_SIZE = 64
SERVICE_HOST_ENV = "KUBERNETES_SERVICE_HOST"


@dataclass(frozen=True)
class Resource:
    """Where a kind lives in the REST API."""

    api_version: str
    kind: str
    plural: str
    namespaced: bool

    @property
    def group(self) -> str:
        return self.api_version.rpartition("/")[0]

    @property
    def version(self) -> str:
        return self.api_version.rpartition("/")[2]


def _r(api_version: str, kind: str, plural: str, *, namespaced: bool = True) -> Resource:
    return Resource(api_version=api_version, kind=kind, plural=plural, namespaced=namespaced)


_ALL = (
    _r("ai.deckhouse.io/v1alpha1", "InferenceService", "inferenceservices"),
    _r("ai.deckhouse.io/v1alpha1", "InferenceServiceClass", "inferenceserviceclasses", namespaced=False),
    _r("ai.deckhouse.io/v1alpha1", "InferenceRecipe", "inferencerecipes", namespaced=False),
    _r("ai.deckhouse.io/v1alpha1", "Model", "models"),
    _r("ai.deckhouse.io/v1alpha1", "ClusterModel", "clustermodels", namespaced=False),
    _r("v1", "Secret", "secrets"),
    _r("v1", "ConfigMap", "configmaps"),
    _r("v1", "Service", "services"),
    _r("v1", "Pod", "pods"),
    _r("v1", "Event", "events"),
    _r("v1", "PersistentVolumeClaim", "persistentvolumeclaims"),
    _r("v1", "Namespace", "namespaces", namespaced=False),
    _r("events.k8s.io/v1", "Event", "events"),
    _r("coordination.k8s.io/v1", "Lease", "leases"),
    _r("apps/v1", "Deployment", "deployments"),
    _r("apps/v1", "ReplicaSet", "replicasets"),  # read by name: controller.live.lineage
    _r("apps/v1", "StatefulSet", "statefulsets"),
    _r("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", "leaderworkersets"),
    _r("autoscaling/v2", "HorizontalPodAutoscaler", "horizontalpodautoscalers"),
    _r("keda.sh/v1alpha1", "ScaledObject", "scaledobjects"),
    _r("discovery.k8s.io/v1", "EndpointSlice", "endpointslices"),
    _r("networking.k8s.io/v1", "Ingress", "ingresses"),
    _r("networking.k8s.io/v1", "NetworkPolicy", "networkpolicies"),
    _r("cert-manager.io/v1", "Certificate", "certificates"),
    _r("resource.k8s.io/v1", "ResourceClaimTemplate", "resourceclaimtemplates"),
    _r("resource.k8s.io/v1", "ResourceClaim", "resourceclaims"),
    _r("resource.k8s.io/v1", "ResourceSlice", "resourceslices", namespaced=False),
    _r("resource.k8s.io/v1", "DeviceClass", "deviceclasses", namespaced=False),
    _r("scheduling.k8s.io/v1", "PriorityClass", "priorityclasses", namespaced=False),
)
RESOURCES: Mapping[tuple[str, str], Resource] = {(r.api_version, r.kind): r for r in _ALL}


def resource_for(api_version: str, kind: str) -> Resource:
    """The registry entry of a kind; ``KeyError`` names the kind when it is not one we touch."""
    try:
        return RESOURCES[(api_version, kind)]
    except KeyError:
        raise KeyError(f"{kind} ({api_version}) is not in the controller's resource registry") from None


def path_for(
    resource: Resource, *, namespace: str | None, name: str | None = None, subresource: str | None = None
) -> str:
    """The REST path of a collection (no ``name``), an object, or an object's subresource.

    A namespaced kind with ``namespace=None`` gives the all-namespaces collection."""
    base = f"/apis/{resource.api_version}" if resource.group else f"/api/{resource.version}"
    if resource.namespaced and namespace:
        base += f"/namespaces/{quote(namespace, safe='')}"
    path = f"{base}/{resource.plural}"
    if name is not None:
        path += f"/{quote(name, safe='')}"
        if subresource:
            path += f"/{subresource}"
    elif subresource:
        raise ValueError("a subresource needs an object name")
    return path


def load_api_client(*, kubeconfig: str | None, env: Mapping[str, str] | None = None) -> ApiClient:
    """An ``ApiClient``: from ``kubeconfig`` when given; in-cluster when not and running in a pod;
    else from ``$KUBECONFIG`` or ``~/.kube/config``."""
    env = os.environ if env is None else env
    configuration = k8s.Configuration()
    if kubeconfig is None and env.get(SERVICE_HOST_ENV):
        k8s_config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
    else:
        path = kubeconfig or env.get("KUBECONFIG") or os.path.expanduser("~/.kube/config")
        k8s_config.load_kube_config(  # type: ignore[no-untyped-call]
            config_file=path, client_configuration=configuration, persist_config=False
        )
    configuration.connection_pool_maxsize = POOL_SIZE
    return k8s.ApiClient(configuration)


# auth_settings() runs the token refresh hook (in-cluster projected tokens, exec plugins); for a
# kubeconfig the hook loads the whole kubeconfig again. Per request that was 5% of the controller's
# CPU at scale (bench.scale with py-spy --gil), so the answer is kept this long.
AUTH_TTL = 30.0
_AUTH_ATTR = "_inference_auth_headers"


def _auth_headers(api_client: ApiClient, now: float | None = None) -> dict[str, str]:
    now = time.monotonic() if now is None else now
    cached = getattr(api_client, _AUTH_ATTR, None)
    if cached is not None and cached[0] > now:
        return dict(cached[1])
    headers: dict[str, str] = {}
    for setting in api_client.configuration.auth_settings().values():
        if setting.get("in") == "header" and setting.get("value"):
            headers[setting["key"]] = setting["value"]
    setattr(api_client, _AUTH_ATTR, (now + AUTH_TTL, headers))
    return dict(headers)


# Every write request (any method but GET) the API server answers is reported to the hook set with
# ``on_write``, refused ones included: the controller counts its writes here, at the one place all
# of them pass (workload, status, Secrets, the model-facts ConfigMap, Events, the Lease), not in
# the modules that decide them, so no write can be left out of the count.
_WRITE_HOOK_ATTR = "_inference_on_write"
WriteHook = Callable[[str, str], None]  # kind, verb


def on_write(api_client: ApiClient, hook: WriteHook | None) -> None:
    """Report each write request this client sends and the API server answers, as (kind, verb)."""
    setattr(api_client, _WRITE_HOOK_ATTR, hook)


_BY_PLURAL = {(r.api_version, r.plural): r.kind for r in _ALL}


def write_label(method: str, path: str, content_type: str | None) -> tuple[str, str]:
    """(kind, verb) of a write request. Pure.

    The kind comes from the path through the resource registry (the plural when not registered);
    the verb is ``status`` for the status subresource, ``apply`` for a server-side apply, and else
    ``create`` (POST), ``update`` (PUT), ``patch`` (other PATCH) or ``delete``."""
    parts = path.split("?", 1)[0].strip("/").split("/")
    if parts[:1] == ["api"]:
        api_version, rest = parts[1], parts[2:]
    else:
        api_version, rest = "/".join(parts[1:3]), parts[3:]
    if rest[:1] == ["namespaces"] and len(rest) > 2:
        rest = rest[2:]  # a namespaced path; "namespaces/<name>" alone is the Namespace itself
    plural = rest[0] if rest else ""
    kind = _BY_PLURAL.get((api_version, plural), plural)
    if len(rest) > 2 and rest[2] == "status":
        return kind, "status"
    if method == "PATCH":
        return kind, "apply" if content_type == "application/apply-patch+yaml" else "patch"
    return kind, {"POST": "create", "PUT": "update", "DELETE": "delete"}.get(method, method.lower())


def _report_write(api_client: ApiClient, method: str, path: str, content_type: str | None) -> None:
    hook = getattr(api_client, _WRITE_HOOK_ATTR, None)
    if hook is not None and method != "GET":
        hook(*write_label(method, path, content_type))


def _headers(api_client: ApiClient, content_type: str | None) -> dict[str, str]:
    headers = {"Accept": "application/json", "User-Agent": "inference-controller"}
    if content_type:
        headers["Content-Type"] = content_type
    headers.update(_auth_headers(api_client))
    return headers


def open_request(
    api_client: ApiClient,
    method: str,
    path: str,
    *,
    query: Mapping[str, str | int | bool] | None = None,
    body: Any = None,
    content_type: str | None = None,
    timeout: float | tuple[float, float] | None = 30.0,
) -> Any:
    """Send a request and return the unread ``urllib3`` response (status already checked: a non-2xx
    answer raises the typed error). For watches, which read the body as a stream."""
    url = api_client.configuration.host + path
    if query:
        url += "?" + urlencode({k: _query_value(v) for k, v in query.items()})
    data = None if body is None else json.dumps(body).encode()
    if isinstance(timeout, tuple):
        t = urllib3.Timeout(connect=timeout[0], read=timeout[1])
    else:
        t = urllib3.Timeout(total=timeout)
    try:
        resp = api_client.rest_client.pool_manager.request(
            method,
            url,
            body=data,
            headers=_headers(api_client, content_type),
            timeout=t,
            preload_content=False,
            retries=urllib3.Retry(total=2, connect=2, read=0, redirect=0, status=0, raise_on_status=False),
        )
    except urllib3.exceptions.HTTPError as e:
        raise ApiUnavailable(f"{method} {path}: {e}", status=0) from e
    _report_write(api_client, method, path, content_type)
    if not 200 <= resp.status <= 299:
        try:
            raw = resp.read()
        except urllib3.exceptions.HTTPError:
            raw = b""
        finally:
            resp.release_conn()
        raise error_from_response(resp.status, raw, what=f"{method} {path}")
    return resp


def request(
    api_client: ApiClient,
    method: str,
    path: str,
    *,
    query: Mapping[str, str | int | bool] | None = None,
    body: Any = None,
    content_type: str | None = None,
    timeout: float | None = 30.0,
) -> dict[str, Any]:
    """Send one request and return the decoded JSON answer (``{}`` when the answer has no body)."""
    resp = open_request(
        api_client, method, path, query=query, body=body, content_type=content_type, timeout=timeout
    )
    try:
        raw = resp.read()
    except urllib3.exceptions.HTTPError as e:
        raise ApiUnavailable(f"{method} {path}: reading the answer: {e}", status=0) from e
    finally:
        resp.release_conn()
    if not raw:
        return {}
    out = jsondecode.loads(raw)
    return out if isinstance(out, dict) else {"items": out}


def _query_value(v: str | int | bool) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)
