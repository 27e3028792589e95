"""A rendered container's launch on this machine, decided from the pod spec alone. Pure.

- ``argv``: the container's ``command`` (or the image's entrypoint when it has none) followed by its
  ``args`` (or the image's default args), with ``$(VAR)`` expanded from the container's environment
  as the kubelet does (``$$`` is a literal ``$``; an unknown reference stays as written).
- ``environment``: ``value``, ``valueFrom.secretKeyRef`` / ``configMapKeyRef`` (from the resolved
  objects; an ``optional`` missing key is left out) and ``fieldRef`` (the pod's name, namespace, uid,
  ``status.podIP``, ``spec.nodeName``...) in the order written, each ``value`` expanded against the
  variables before it; then the image's environment for names the container does not set, and
  ``PATH`` (the image's bin directories first).
- ``mounts``: every ``volumeMounts`` entry as (volume, mountPath, subPath, readOnly).
- ``listen``: the only change to the launch: ``--host`` becomes ``127.0.0.1`` and ``--port`` a free
  one when the rendered port is taken; ``MODEL_FETCHER_METRICS_PORT`` likewise (with
  ``MODEL_FETCHER_METRICS_HOST=127.0.0.1``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

LOOPBACK = "127.0.0.1"
FETCHER_PORT_ENV = "MODEL_FETCHER_METRICS_PORT"
FETCHER_HOST_ENV = "MODEL_FETCHER_METRICS_HOST"
_REF = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")


class LaunchError(ValueError):
    """The container cannot be launched here as rendered (a missing Secret key, an unknown image...)."""


@dataclass(frozen=True)
class ImageRun:
    """How an image runs on this machine: what its entrypoint and default args are, which directories
    lead ``PATH`` (where the image's ``python3``, ``hf``... are), and environment the image sets."""

    entrypoint: tuple[str, ...] = ()
    default_args: tuple[str, ...] = ()
    path: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class PodObjects:
    """What the kubelet would read for the pod: its identity, and the Secrets and ConfigMaps by name
    (``{name: {key: value}}``, values already decoded)."""

    name: str
    namespace: str
    uid: str = "local"
    node_name: str = "localhost"
    pod_ip: str = LOOPBACK
    labels: Mapping[str, str] = field(default_factory=dict)
    secrets: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    config_maps: Mapping[str, Mapping[str, str]] = field(default_factory=dict)


@dataclass(frozen=True)
class Mount:
    volume: str
    path: str
    sub_path: str = ""
    read_only: bool = False


@dataclass(frozen=True)
class Launch:
    """One container's process: ``argv`` runs with exactly ``env`` inside its mounts."""

    name: str
    argv: tuple[str, ...]
    env: Mapping[str, str]
    mounts: tuple[Mount, ...]
    working_dir: str = "/"
    changes: tuple[str, ...] = ()  # each difference from the rendered launch, as a sentence


def expand(text: str, env: Mapping[str, str]) -> str:
    """``$(VAR)`` references of ``text`` from ``env``, as the kubelet expands them."""

    def sub(m: re.Match[str]) -> str:
        if m.group(0) == "$$":
            return "$"
        name = m.group(1)
        return env[name] if name in env else m.group(0)

    return _REF.sub(sub, text)


def _field(path: str, pod: PodObjects) -> str:
    fields = {
        "metadata.name": pod.name,
        "metadata.namespace": pod.namespace,
        "metadata.uid": pod.uid,
        "spec.nodeName": pod.node_name,
        "spec.serviceAccountName": "default",
        "status.podIP": pod.pod_ip,
        "status.hostIP": LOOPBACK,
    }
    m = re.fullmatch(r"metadata\.labels\['([^']+)'\]", path)
    if m:
        return pod.labels.get(m.group(1), "")
    if path not in fields:
        raise LaunchError(f"fieldRef {path} is not supported here")
    return fields[path]


def _key_ref(kind: str, ref: Mapping[str, Any], objects: Mapping[str, Mapping[str, str]]) -> str | None:
    found = objects.get(ref["name"], {}).get(ref["key"])
    if found is None and not ref.get("optional"):
        raise LaunchError(f"{kind} {ref['name']!r} has no key {ref['key']!r}")
    return found


def environment(container: Mapping[str, Any], pod: PodObjects, image: ImageRun) -> dict[str, str]:
    """The container's environment as the kubelet builds it, then the image's (module doc)."""
    env: dict[str, str] = {}
    for source in container.get("envFrom") or ():
        prefix = source.get("prefix", "")
        if "secretRef" in source:
            env.update({prefix + k: v for k, v in pod.secrets.get(source["secretRef"]["name"], {}).items()})
        elif "configMapRef" in source:
            ref = source["configMapRef"]["name"]
            env.update({prefix + k: v for k, v in pod.config_maps.get(ref, {}).items()})
    for e in container.get("env") or ():
        value: str | None
        if "valueFrom" not in e:
            value = expand(str(e.get("value", "")), env)
        else:
            src = e["valueFrom"]
            if "secretKeyRef" in src:
                value = _key_ref("Secret", src["secretKeyRef"], pod.secrets)
            elif "configMapKeyRef" in src:
                value = _key_ref("ConfigMap", src["configMapKeyRef"], pod.config_maps)
            elif "fieldRef" in src:
                value = _field(src["fieldRef"]["fieldPath"], pod)
            else:
                raise LaunchError(f"env {e['name']}: {sorted(src)} is not supported here")
        if value is not None:
            env[e["name"]] = value
    for name, value in image.env.items():
        env.setdefault(name, value)
    path = [*image.path, *(env.get("PATH") or "/usr/local/bin:/usr/bin:/bin").split(":")]
    env["PATH"] = ":".join(path)
    return env


def command_line(container: Mapping[str, Any], image: ImageRun, env: Mapping[str, str]) -> list[str]:
    """``command`` + ``args`` (the image's entrypoint / default args where not given), expanded."""
    command = container.get("command")
    args = container.get("args")
    if command:
        argv = [*command, *(args or ())]
    else:
        argv = [*image.entrypoint, *(image.default_args if args is None else args)]
    if not argv:
        raise LaunchError(f"container {container['name']} has no command and its image no entrypoint")
    return [expand(str(a), env) for a in argv]


def mounts(container: Mapping[str, Any]) -> tuple[Mount, ...]:
    return tuple(
        Mount(m["name"], m["mountPath"], m.get("subPath", ""), bool(m.get("readOnly", False)))
        for m in container.get("volumeMounts") or ()
    )


def listen(
    argv: Sequence[str], env: Mapping[str, str], taken: Callable[[int], bool], free: Callable[[], int]
) -> tuple[list[str], dict[str, str], list[str]]:
    """The listen address on this machine (module doc): loopback, and a free port for a taken one.
    Returns the new argv, env and a sentence per change."""
    out, new_env, changes = list(argv), dict(env), []
    for i in range(len(out) - 1):
        if out[i] == "--host" and out[i + 1] != LOOPBACK:
            changes.append(f"--host {out[i + 1]} -> {LOOPBACK}")
            out[i + 1] = LOOPBACK
        elif out[i] == "--port" and out[i + 1].isdigit() and taken(int(out[i + 1])):
            port = free()
            changes.append(f"--port {out[i + 1]} (taken) -> {port}")
            out[i + 1] = str(port)
    if FETCHER_PORT_ENV in new_env:
        new_env[FETCHER_HOST_ENV] = LOOPBACK
        rendered = new_env[FETCHER_PORT_ENV]
        if rendered.isdigit() and int(rendered) and taken(int(rendered)):
            new_env[FETCHER_PORT_ENV] = str(free())
            changes.append(f"{FETCHER_PORT_ENV} {rendered} (taken) -> {new_env[FETCHER_PORT_ENV]}")
    return out, new_env, changes


def listen_port(launch: Launch) -> int | None:
    """The ``--port`` the process listens on, if its launch names one."""
    argv = list(launch.argv)
    for i in range(len(argv) - 1):
        if argv[i] == "--port" and argv[i + 1].isdigit():
            return int(argv[i + 1])
    return None


def plan_launch(
    container: Mapping[str, Any],
    pod: PodObjects,
    images: Mapping[str, ImageRun],
    *,
    taken: Callable[[int], bool],
    free: Callable[[], int],
) -> Launch:
    """The process of ``container`` (module doc)."""
    image = images.get(container["image"])
    if image is None:
        raise LaunchError(f"no local way to run image {container['image']!r} (known: {sorted(images)})")
    env = environment(container, pod, image)
    argv, env, changes = listen(command_line(container, image, env), env, taken, free)
    return Launch(
        name=container["name"],
        argv=tuple(argv),
        env=env,
        mounts=mounts(container),
        working_dir=container.get("workingDir") or "/",
        changes=tuple(changes),
    )
