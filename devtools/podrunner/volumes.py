"""The pod's volumes as host directories. I/O (writes under the runner's work directory).

- ``secret`` / ``configMap``: a directory with one file per key (or per ``items`` entry, at its
  ``path``), written before the first container starts; Secret files are ``0600`` unless
  ``defaultMode`` says otherwise. A missing object fails the pod, unless the volume is ``optional``.
  The layout is the kubelet's (its AtomicWriter): the files live in ``..<timestamp>/``, ``..data``
  links to that directory and each ``<key>`` is a link to ``..data/<key>``; ``update`` writes a new
  timestamped directory and swaps ``..data`` by a rename, as the kubelet does when the object
  changes (a cert-manager rotation of ``<order>-tls``), so a file watcher sees what it sees in a pod.
- ``emptyDir``: a new directory; ``medium: Memory`` puts it under ``/dev/shm`` (a tmpfs, like the
  kubelet's), removed with the runner.
- ``persistentVolumeClaim``: the directory the caller gives for the claim name (``claims``), else a
  new one in the work directory (a new claim is empty).

Every other kind (hostPath, projected, ...) is refused: the rendered pods do not use them.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from devtools.podrunner.launch import LaunchError, PodObjects


def materialize(
    volumes: list[Mapping[str, Any]],
    pod: PodObjects,
    workdir: Path,
    claims: Mapping[str, Path],
) -> tuple[dict[str, Path], list[Path]]:
    """Host directories by volume name, and the directories to remove when the pod goes."""
    out: dict[str, Path] = {}
    scratch: list[Path] = []
    for v in volumes:
        name = v["name"]
        if "secret" in v:
            src = v["secret"]
            out[name] = _key_files(
                workdir / "volumes" / name,
                pod.secrets.get(src["secretName"]),
                src,
                what=f"Secret {src['secretName']!r}",
                mode=0o600,
            )
        elif "configMap" in v:
            src = v["configMap"]
            out[name] = _key_files(
                workdir / "volumes" / name,
                pod.config_maps.get(src["name"]),
                src,
                what=f"ConfigMap {src['name']!r}",
                mode=0o644,
            )
        elif "emptyDir" in v:
            if (v["emptyDir"] or {}).get("medium") == "Memory":
                path = Path(tempfile.mkdtemp(prefix=f"podrunner-{pod.name}-{name}-", dir="/dev/shm"))
                scratch.append(path)
            else:
                path = workdir / "volumes" / name
                path.mkdir(parents=True, exist_ok=True)
            out[name] = path
        elif "persistentVolumeClaim" in v:
            claim = v["persistentVolumeClaim"]["claimName"]
            path = claims.get(claim) or workdir / "claims" / claim
            path.mkdir(parents=True, exist_ok=True)
            out[name] = path
        else:
            raise LaunchError(f"volume {name}: {sorted(set(v) - {'name'})} is not supported here")
    return out, scratch


def remove(scratch: list[Path]) -> None:
    for path in scratch:
        shutil.rmtree(path, ignore_errors=True)


def _key_files(
    into: Path, data: Mapping[str, str] | None, src: Mapping[str, Any], *, what: str, mode: int
) -> Path:
    into.mkdir(parents=True, exist_ok=True)
    if data is None:
        if src.get("optional"):
            return into
        raise LaunchError(f"{what} is missing: the pod cannot start")
    update(into, data, src, what=what, mode=mode)
    return into


def update(
    into: Path, data: Mapping[str, str], src: Mapping[str, Any], *, what: str, mode: int = 0o600
) -> None:
    """Write ``data`` into the volume directory ``into`` the kubelet's way (module doc)."""
    items = src.get("items")
    wanted = [(i["key"], i["path"], i.get("mode")) for i in items] if items else [(k, k, None) for k in data]
    stamp = into / f"..{time.strftime('%Y_%m_%d_%H_%M_%S')}.{time.monotonic_ns()}"
    for key, rel, item_mode in wanted:
        if key not in data:
            raise LaunchError(f"{what} has no key {key!r}")
        path = stamp / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(data[key], encoding="utf-8")
        os.chmod(path, item_mode or src.get("defaultMode") or mode)
    link, tmp = into / "..data", into / "..data_tmp"
    old = link.resolve() if link.is_symlink() else None
    with contextlib.suppress(FileNotFoundError):
        tmp.unlink()
    tmp.symlink_to(stamp.name)
    os.replace(tmp, link)
    for _, rel, _ in wanted:
        top = rel.split("/", 1)[0]
        user = into / top
        if not user.is_symlink():
            user.symlink_to(f"..data/{top}")
    if old is not None and old != stamp:
        shutil.rmtree(old, ignore_errors=True)
