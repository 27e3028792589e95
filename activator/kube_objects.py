"""What the activator takes from the API's Secrets and EndpointSlices (as JSON dicts). Pure.

- ``<name>-tls`` (type ``kubernetes.io/tls``, labelled with the order by cert-manager's
  ``secretTemplate``): the serving pair, versioned by the Secret's resourceVersion.
- ``<name>-auth`` (labelled with the order by the controller): only the digest of its ``token``.
- EndpointSlices labelled with the order and managed by Kubernetes' EndpointSlice controller (the
  slices of a Service that selects the order's pods): the ready endpoints' ``address:port``. A slice
  the controller writes to point the order's Service at the activator is managed by another
  manager, so it never counts as an upstream (the activator would forward to itself).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from typing import Any

from activator.hosts import OrderKey
from activator.sources import TlsPair
from activator.tokens import token_digest
from shared import names

LABEL_ORDER = names.LABEL_ORDER
TLS_SECRET_TYPE = "kubernetes.io/tls"
SLICE_MANAGED_BY = "endpointslice.kubernetes.io/managed-by"
SLICE_CONTROLLER = "endpointslice-controller.k8s.io"
UPSTREAM_PORT_NAME = "https"
DEFAULT_UPSTREAM_PORT = names.RUNTIME_PORT
MAX_SECRET_VALUE_BYTES = 64 * 1024  # a certificate chain or a token beyond this is not the platform's

Obj = Mapping[str, Any]


def _mapping(value: Any) -> Obj:
    return value if isinstance(value, Mapping) else {}


def _meta(obj: Obj) -> Obj:
    return _mapping(obj.get("metadata"))


def object_name(obj: Obj) -> str:
    name = _meta(obj).get("name")
    return name if isinstance(name, str) else ""


def order_label(obj: Obj) -> OrderKey | None:
    """The order an object is labelled with, in the object's namespace."""
    meta = _meta(obj)
    labels = _mapping(meta.get("labels"))
    name, namespace = labels.get(LABEL_ORDER), meta.get("namespace")
    if isinstance(name, str) and name and isinstance(namespace, str) and namespace:
        return OrderKey(namespace, name)
    return None


def _decoded(data: Obj, key: str) -> bytes | None:
    value = data.get(key)
    if not isinstance(value, str) or not value or len(value) > MAX_SECRET_VALUE_BYTES * 4 // 3 + 4:
        return None
    try:
        return base64.b64decode(value, validate=True) or None
    except (binascii.Error, ValueError):
        return None


def secret_kind(secret: Obj) -> tuple[OrderKey, str] | None:
    """(order, "tls" or "auth") for an order's ``<name>-tls`` or ``<name>-auth`` Secret; else None."""
    order = order_label(secret)
    if order is None:
        return None
    name = _meta(secret).get("name")
    if name == names.tls_secret(order.name):
        return order, "tls"
    if name == names.auth_secret(order.name):
        return order, "auth"
    return None


def tls_pair(secret: Obj) -> TlsPair | None:
    """The pair of a ``kubernetes.io/tls`` Secret with both keys set; None otherwise."""
    data = secret.get("data")
    if secret.get("type") != TLS_SECRET_TYPE or not isinstance(data, Mapping):
        return None
    cert, key = _decoded(data, "tls.crt"), _decoded(data, "tls.key")
    if cert is None or key is None:
        return None
    return TlsPair(cert, key, str(_meta(secret).get("resourceVersion") or ""))


def auth_digest(secret: Obj) -> bytes | None:
    """The digest of the Secret's ``token``; None when it has none."""
    data = secret.get("data")
    if not isinstance(data, Mapping):
        return None
    token = _decoded(data, names.AUTH_TOKEN_KEY)
    return token_digest(token) if token else None


def is_upstream_slice(endpoint_slice: Obj) -> bool:
    """Whether a slice lists the order's pods (managed by the EndpointSlice controller)."""
    labels = _meta(endpoint_slice).get("labels")
    return isinstance(labels, Mapping) and labels.get(SLICE_MANAGED_BY) == SLICE_CONTROLLER


def ready_addresses(endpoint_slice: Obj) -> list[str]:
    """``address:port`` of each ready endpoint (``conditions.ready`` unset counts as ready, as the API
    says), on the slice's ``https`` port (else its only port, else 8443); IPv6 in brackets."""
    if not is_upstream_slice(endpoint_slice):
        return []
    port = _port(endpoint_slice.get("ports"))
    ipv6 = endpoint_slice.get("addressType") == "IPv6"
    out: list[str] = []
    for endpoint in endpoint_slice.get("endpoints") or ():
        if not isinstance(endpoint, Mapping):
            continue
        conditions = _mapping(endpoint.get("conditions"))
        if conditions.get("ready") is False or conditions.get("terminating") is True:
            continue
        for address in (endpoint.get("addresses") or ())[:1]:  # the API: consumers use the first
            if isinstance(address, str) and address:
                out.append(f"[{address}]:{port}" if ipv6 else f"{address}:{port}")
    return out


def _port(ports: Any) -> int:
    if not isinstance(ports, list):
        return DEFAULT_UPSTREAM_PORT
    numbers = [p for p in ports if isinstance(p, Mapping) and isinstance(p.get("port"), int)]
    for p in numbers:
        if p.get("name") == UPSTREAM_PORT_NAME:
            return int(p["port"])
    return int(numbers[0]["port"]) if len(numbers) == 1 else DEFAULT_UPSTREAM_PORT
