"""deploy/base/activator: read-only RBAC, a locked-down pod probed on the admin port."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from activator.settings import Settings

DIR = Path(__file__).resolve().parents[3] / "deploy" / "base" / "activator"


def _docs() -> dict[str, dict[str, Any]]:
    docs = [d for f in ("rbac.yaml", "deployment.yaml") for d in yaml.safe_load_all((DIR / f).read_text())]
    return {d["kind"]: d for d in docs}


def test_the_activator_may_only_read_secrets_and_endpointslices() -> None:
    rules = _docs()["ClusterRole"]["rules"]
    assert {(g, r) for rule in rules for g in rule["apiGroups"] for r in rule["resources"]} == {
        ("", "secrets"),
        ("discovery.k8s.io", "endpointslices"),
    }
    assert all(set(rule["verbs"]) == {"get", "list", "watch"} for rule in rules)


def test_the_pod_runs_locked_down_and_is_probed_on_the_admin_port() -> None:
    pod = _docs()["Deployment"]["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsUser"] == 65532
    assert pod["securityContext"]["seccompProfile"]["type"] == "RuntimeDefault"
    (container,) = pod["containers"]
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert container["securityContext"]["capabilities"]["drop"] == ["ALL"]
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    defaults = Settings(upstream_ca_file="ca.crt")
    assert ports == {"https": defaults.port, "metrics": defaults.admin_port}
    for probe in ("livenessProbe", "readinessProbe"):
        assert container[probe]["httpGet"]["port"] == "metrics"
    assert "--upstream-ca-file=/etc/inference/platform-ca/ca.crt" in container["args"]


def _bytes(quantity: str) -> int:
    units = {"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30}
    for suffix, factor in units.items():
        if quantity.endswith(suffix):
            return int(quantity.removesuffix(suffix)) * factor
    return int(quantity)


PER_CONNECTION = 320 * 1024
"""An open TLS connection's memory, measured: ``python -m bench.activator_fuzz --clients 500
--kinds slowloris`` took the process from 54 to 210 MiB RSS. Most of it is asyncio's TLS read buffer,
``SSLProtocol.max_size`` (256 KiB), allocated for every connection from its first byte, handshake
included, whoever the client is."""


def test_the_connections_anyone_may_open_fit_in_half_the_memory_limit() -> None:
    """Opening connections needs no token: ``--max-connections`` of them, each slow to the header
    timeout, must not reach the pod's memory limit (which would cut every held request of every
    order). Half the limit stays for the process and the held bodies. With 4096 (the old default)
    they took about 1.3 GiB against a 1 GiB limit."""
    import asyncio.sslproto

    assert asyncio.sslproto.SSLProtocol.max_size <= PER_CONNECTION
    (container,) = _docs()["Deployment"]["spec"]["template"]["spec"]["containers"]
    limit = _bytes(container["resources"]["limits"]["memory"])
    flags = dict(a.removeprefix("--").split("=", 1) for a in container["args"])
    max_connections = int(flags.get("max-connections", Settings(upstream_ca_file="ca.crt").max_connections))
    assert max_connections * PER_CONNECTION <= limit // 2
    assert Settings(upstream_ca_file="ca.crt").max_connections * PER_CONNECTION <= limit // 2


def test_the_bodies_kept_and_the_connections_fit_in_the_memory_limit_together() -> None:
    """The connections anyone may open and the bodies callers with a token may make it keep, both at
    their bounds, stay within the pod's memory limit with a quarter of it left for the process."""
    (container,) = _docs()["Deployment"]["spec"]["template"]["spec"]["containers"]
    limit = _bytes(container["resources"]["limits"]["memory"])
    flags = dict(a.removeprefix("--").split("=", 1) for a in container["args"])
    defaults = Settings(upstream_ca_file="ca.crt")
    connections = int(flags.get("max-connections", defaults.max_connections))
    bodies = int(flags.get("max-body-bytes-total", defaults.max_body_bytes_total))
    assert connections * PER_CONNECTION + bodies <= limit * 3 // 4
