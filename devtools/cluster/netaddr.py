"""A non-loopback address of this machine, for the aggregation layer.

kube-apiserver reaches an extension API server (KEDA's metrics adapter) through the EndpointSlice of
the APIService's Service (``--enable-aggregator-routing=true``: the endpoint address, not the
ClusterIP, which nothing routes here). The API server refuses loopback (127.0.0.0/8) and link-local
endpoint addresses, so the adapter listens on the address the default route leaves from (found by
``connect`` on a UDP socket: no packet is sent). A machine without a default route gets
``FALLBACK`` added to ``lo`` (``ip addr add``, as root); ``INFERENCE_AGGREGATION_IP`` overrides both.
"""

from __future__ import annotations

import ipaddress
import os
import socket
import subprocess

# TEST-NET-3 (RFC 5737): never a real peer; a /32 on ``lo`` when the machine has no default route.
FALLBACK = "203.0.113.254"


def usable(ip: str) -> bool:
    """Whether the API server accepts ``ip`` as an endpoint address (IPv4, not loopback, link-local,
    multicast or unspecified)."""
    try:
        addr = ipaddress.ip_address(ip)
    except ValueError:
        return False
    return addr.version == 4 and not (
        addr.is_loopback or addr.is_link_local or addr.is_multicast or addr.is_unspecified
    )


def default_route_ip() -> str | None:
    """The source address of the default route, or None when there is none."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("192.0.2.1", 9))  # TEST-NET-1: chooses the route, sends nothing
        except OSError:
            return None
        ip: str = s.getsockname()[0]
    return ip if usable(ip) else None


def _has_address(ip: str) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind((ip, 0))
        except OSError:
            return False
    return True


def aggregation_ip() -> str:
    """``INFERENCE_AGGREGATION_IP``, else the default route's source address, else ``FALLBACK`` on
    ``lo`` (added once; needs root)."""
    forced = os.environ.get("INFERENCE_AGGREGATION_IP")
    if forced:
        if not usable(forced):
            raise RuntimeError(f"INFERENCE_AGGREGATION_IP={forced} is loopback, link-local or not IPv4")
        return forced
    found = default_route_ip()
    if found:
        return found
    if not _has_address(FALLBACK):
        res = subprocess.run(
            ["ip", "addr", "add", f"{FALLBACK}/32", "dev", "lo"], capture_output=True, text=True, check=False
        )
        if res.returncode != 0 or not _has_address(FALLBACK):
            raise RuntimeError(
                f"no default route, and `ip addr add {FALLBACK}/32 dev lo` failed ({res.stderr.strip()}); "
                "run as root or set INFERENCE_AGGREGATION_IP to a non-loopback address of this machine"
            )
    return FALLBACK
