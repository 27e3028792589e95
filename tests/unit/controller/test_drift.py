from __future__ import annotations

import copy
from typing import Any

import pytest

from controller.live.drift import drifted
from shared import runtime_images

Obj = dict[str, Any]

DESIRED: Obj = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "chat", "labels": {"app": "chat"}, "annotations": {"ours": "1"}},
    "spec": {
        "selector": {"matchLabels": {"app": "chat"}},
        "template": {
            "metadata": {"labels": {"app": "chat"}},
            "spec": {
                "containers": [
                    {
                        "name": "runtime",
                        "image": runtime_images.pinned().image,
                        "args": ["--model", "/models/m", "--max-model-len", "8192"],
                        "resources": {"requests": {"cpu": "1000m", "memory": "16Gi"}},
                        "ports": [{"name": "http", "containerPort": 8000}],
                    }
                ],
                "volumes": [{"name": "cache", "emptyDir": {}}],
                "securityContext": {},
            },
        },
    },
}


def stored() -> Obj:
    """DESIRED as the API server would return it: defaults filled, quantities canonical."""
    live = copy.deepcopy(DESIRED)
    live["metadata"]["resourceVersion"] = "42"
    live["metadata"]["annotations"]["deployment.kubernetes.io/revision"] = "1"
    live["spec"]["replicas"] = 3
    live["spec"]["strategy"] = {"type": "RollingUpdate"}
    pod = live["spec"]["template"]
    pod["metadata"]["annotations"] = {"kubectl.kubernetes.io/restartedAt": "2026-11-30T20:00:00Z"}
    c = pod["spec"]["containers"][0]
    c["imagePullPolicy"] = "IfNotPresent"
    c["terminationMessagePath"] = "/dev/termination-log"
    c["resources"]["requests"]["cpu"] = "1"
    c["ports"][0]["protocol"] = "TCP"
    del pod["spec"]["securityContext"]
    live["status"] = {"replicas": 3}
    return live


def test_what_the_server_defaults_or_others_add_is_not_drift() -> None:
    assert drifted(DESIRED, stored()) is None


@pytest.mark.parametrize(
    ("edit", "path"),
    [
        (
            lambda o: o["spec"]["template"]["spec"]["containers"][0].update(image="evil:latest"),
            "spec.template.spec.containers[0].image",
        ),
        (
            lambda o: o["spec"]["template"]["spec"]["containers"][0]["args"].__setitem__(3, "4096"),
            "spec.template.spec.containers[0].args[3]",
        ),
        (
            lambda o: o["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"].update(
                memory="8Gi"
            ),
            "spec.template.spec.containers[0].resources.requests.memory",
        ),
        (
            lambda o: o["spec"]["template"]["spec"]["containers"][0]["ports"][0].update(containerPort="8000"),
            "spec.template.spec.containers[0].ports[0].containerPort",
        ),
        (lambda o: o["spec"]["template"]["spec"].update(volumes=[]), "spec.template.spec.volumes"),
        (lambda o: o["metadata"]["labels"].pop("app"), "metadata.labels.app"),
        (lambda o: o.pop("spec"), "spec.selector"),
    ],
)
def test_a_changed_or_removed_field_we_set_is_drift_and_named(edit: Any, path: str) -> None:
    live = stored()
    edit(live)
    assert drifted(DESIRED, live) == path


def test_kinds_that_cannot_change_in_place_are_not_compared() -> None:
    pvc: Obj = {
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "m"},
        "spec": {"resources": {"requests": {"storage": "40Gi"}}},
    }
    live = copy.deepcopy(pvc)
    live["spec"]["resources"]["requests"]["storage"] = "80Gi"
    assert drifted(pvc, live) is None
