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
