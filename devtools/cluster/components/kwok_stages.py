"""kwok's stages: how the simulated pods and nodes move through their lifecycle.

kwok's own 'fast' stages from the pinned module, plus two of ours for ``HOLD_INIT_NAMESPACE``: a test
can watch a pod whose init container (the model fetcher) is running, then release it.
"""

from __future__ import annotations

import pathlib

import yaml

# Pods in this namespace stay Pending with their init containers running (and a pod IP) until
# they are annotated ``INIT_RELEASE_ANNOTATION=true``: a test can watch a "running" model fetcher.
# Released, they become Running and Ready as kwok's pod-ready stage would make them, keeping the IP
# (pod-ready would allocate a second one, which the API server refuses).
HOLD_INIT_NAMESPACE = "kwok-hold-init"
INIT_RELEASE_ANNOTATION = "test.inference.deckhouse.io/init-done"
_IN_HOLD: dict[str, object] = {
    "key": ".metadata.namespace",
    "operator": "In",
    "values": [HOLD_INIT_NAMESPACE],
}
_RELEASE = f'.metadata.annotations["{INIT_RELEASE_ANNOTATION}"]'
_LIVE_PENDING: list[dict[str, object]] = [
    {"key": ".metadata.deletionTimestamp", "operator": "DoesNotExist"},
    {"key": ".spec.nodeName", "operator": "Exists"},
    {"key": ".status.phase", "operator": "In", "values": ["Pending"]},
]
_HOLD_TEMPLATE = """{{ $now := Now }}
initContainerStatuses:
{{ range .spec.initContainers }}
- image: {{ .image | Quote }}
  name: {{ .name | Quote }}
  ready: false
  restartCount: 0
  started: true
  state:
    running:
      startedAt: {{ $now | Quote }}
{{ end }}
containerStatuses:
{{ range .spec.containers }}
- image: {{ .image | Quote }}
  name: {{ .name | Quote }}
  ready: false
  restartCount: 0
  started: false
  state:
    waiting:
      reason: PodInitializing
{{ end }}
{{ $podIPs := PodIPsWith .spec.nodeName ( or .spec.hostNetwork false ) ( or .metadata.uid "" ) ( or .metadata.name "" ) ( or .metadata.namespace "" ) }}
{{ with $podIPs }}
podIP: {{ index . 0 | Quote }}
podIPs:
{{ range . }}
- ip: {{ . | Quote }}
{{ end }}
{{ end }}
phase: Pending
"""
_RELEASE_TEMPLATE = """{{ $now := Now }}
conditions:
- lastTransitionTime: {{ $now | Quote }}
  status: "True"
  type: Initialized
- lastTransitionTime: {{ $now | Quote }}
  status: "True"
  type: Ready
- lastTransitionTime: {{ $now | Quote }}
  status: "True"
  type: ContainersReady
initContainerStatuses:
{{ range .spec.initContainers }}
- image: {{ .image | Quote }}
  name: {{ .name | Quote }}
  ready: true
  restartCount: 0
  started: false
  state:
    terminated:
      exitCode: 0
      finishedAt: {{ $now | Quote }}
      reason: Completed
      startedAt: {{ $now | Quote }}
{{ end }}
containerStatuses:
{{ range .spec.containers }}
- image: {{ .image | Quote }}
  name: {{ .name | Quote }}
  ready: true
  restartCount: 0
  started: true
  state:
    running:
      startedAt: {{ $now | Quote }}
{{ end }}
phase: Running
startTime: {{ $now | Quote }}
"""


def _stage(name: str, expressions: list[dict[str, object]], template: str) -> dict[str, object]:
    return {
        "apiVersion": "kwok.x-k8s.io/v1alpha1",
        "kind": "Stage",
        "metadata": {"name": name},
        "spec": {
            "resourceRef": {"apiGroup": "v1", "kind": "Pod"},
            "selector": {"matchExpressions": expressions},
            "next": {"statusTemplate": template},
        },
    }


def hold_init_stages() -> list[dict[str, object]]:
    """The stages of ``HOLD_INIT_NAMESPACE``'s pods: hold (once: until the pod has an IP), release."""
    hold: list[dict[str, object]] = [
        *_LIVE_PENDING,
        _IN_HOLD,
        {"key": _RELEASE, "operator": "NotIn", "values": ["true"]},
        {"key": ".status.podIP", "operator": "DoesNotExist"},
    ]
    release: list[dict[str, object]] = [
        *_LIVE_PENDING,
        _IN_HOLD,
        {"key": _RELEASE, "operator": "In", "values": ["true"]},
    ]
    return [
        _stage("pod-hold-init", hold, _HOLD_TEMPLATE),
        _stage("pod-release-init", release, _RELEASE_TEMPLATE),
    ]


def write_stages_config(module_dir: pathlib.Path, path: pathlib.Path) -> pathlib.Path:
    """kwok's default 'fast' stages, taken from the kwok module's tree at ``module_dir`` (node init and
    heartbeat, pod ready/complete/delete, init containers included) and written as one config file;
    plus ``hold_init_stages``, with pod-ready leaving ``HOLD_INIT_NAMESPACE`` to them."""
    stage = module_dir / "kustomize" / "stage"
    files = [
        stage / "node/fast/node-initialize.yaml",
        stage / "node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
        stage / "pod/fast/pod-ready.yaml",
        stage / "pod/fast/pod-complete.yaml",
        stage / "pod/fast/pod-delete.yaml",
    ]
    docs = [yaml.safe_load(f.read_text()) for f in files]
    for doc in docs:
        if doc["metadata"]["name"] == "pod-ready":
            doc["spec"]["selector"]["matchExpressions"].append({**_IN_HOLD, "operator": "NotIn"})
    docs += hold_init_stages()
    path.write_text("---\n".join(yaml.dump(d, Dumper=_LiteralDumper, sort_keys=False) for d in docs))
    return path


class _LiteralDumper(yaml.SafeDumper):
    """Writes multi-line strings (the stages' templates) as literal blocks, readable in the file."""


def _str(dumper: yaml.SafeDumper, text: str) -> yaml.ScalarNode:
    style = "|" if "\n" in text else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", text, style=style)


_LiteralDumper.add_representer(str, _str)
