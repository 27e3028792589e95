"""The simulated GPU fleet: KWOK nodes with DRA ResourceSlices shaped like the NVIDIA DRA driver's.

Pure functions returning Kubernetes objects as dicts; the launcher applies ``default_fleet()`` at
``up``, and the planner's tests and benchmarks import it. The fleet is declared once, in ``FLEET``.

Device shape (driver ``gpu.nvidia.com``, one pool and one slice per node):

- whole GPUs: attributes ``type=gpu``, ``uuid``, ``productName``, ``brand``, ``architecture``,
  ``cudaComputeCapability`` (a version), ``driverVersion`` (a version), ``index``; capacity ``memory``;
- MIG devices (a MIG-partitioned node publishes only these, as the driver does for static MIG):
  ``type=mig``, ``profile`` (``3g.20gb`` ...), ``parentUUID``, ``parentIndex``, and the parent's
  product, architecture and compute capability; capacity ``memory``;
- shareable GPUs (TimeSlicing/MPS): ``allowMultipleAllocations: true`` and DRA consumable capacity
  (KEP-5075): a claim requests ``capacity.requests.memory``; the scheduler lets claims share the
  device until its memory is used up. A claim without a request takes the whole device. The share
  percentage is the requested memory over the device's memory. See docs/local-control-plane.md.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

Obj = dict[str, Any]
DRIVER = "gpu.nvidia.com"
DRIVER_VERSION = "580.95.5"
FAKE_NODE_ANNOTATION = {"kwok.x-k8s.io/node": "fake"}
MODEL_STORAGE_CLASS = "inference-models"


@dataclass(frozen=True)
class Gpu:
    product: str
    architecture: str
    compute: str  # semver
    memory_gib: int
    label: str  # nvidia.com/gpu.product


H100 = Gpu("NVIDIA H100 80GB HBM3", "Hopper", "9.0.0", 80, "NVIDIA-H100-80GB-HBM3")
A100 = Gpu("NVIDIA A100-SXM4-40GB", "Ampere", "8.0.0", 40, "NVIDIA-A100-SXM4-40GB")
L4 = Gpu("NVIDIA L4", "Ada Lovelace", "8.9.0", 24, "NVIDIA-L4")

# A100 40GB MIG layout on the partitioned node: 3 + 2 + 1 + 1 = 7 compute slices per GPU.
A100_MIG_LAYOUT = (("3g.20gb", 20), ("2g.10gb", 10), ("1g.5gb", 5), ("1g.5gb", 5))


@dataclass(frozen=True)
class NodeGroup:
    prefix: str
    count: int
    gpu: Gpu
    gpus_per_node: int
    mig: bool = False
    shareable: bool = False


# The default fleet, declared once.
FLEET: tuple[NodeGroup, ...] = (
    NodeGroup("gpu-h100", 2, H100, 8),
    NodeGroup("gpu-a100", 1, A100, 4),
    NodeGroup("gpu-a100-mig", 1, A100, 4, mig=True),
    NodeGroup("gpu-l4", 4, L4, 1, shareable=True),
)


def _uuid(node: str, index: int, suffix: str = "") -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_DNS, f"{node}/{index}/{suffix}"))


def _gpu_device(node: str, i: int, gpu: Gpu, *, shareable: bool) -> Obj:
    dev: Obj = {
        "name": f"gpu-{i}",
        "attributes": {
            "type": {"string": "gpu"},
            "uuid": {"string": f"GPU-{_uuid(node, i)}"},
            "productName": {"string": gpu.product},
            "brand": {"string": "Nvidia"},
            "architecture": {"string": gpu.architecture},
            "cudaComputeCapability": {"version": gpu.compute},
            "driverVersion": {"version": DRIVER_VERSION},
            "index": {"int": i},
            "minor": {"int": i},
        },
        "capacity": {"memory": {"value": f"{gpu.memory_gib}Gi"}},
    }
    if shareable:
        dev["allowMultipleAllocations"] = True
    return dev


def _mig_devices(node: str, i: int, gpu: Gpu) -> list[Obj]:
    parent = f"GPU-{_uuid(node, i)}"
    out = []
    for j, (profile, mem) in enumerate(A100_MIG_LAYOUT):
        out.append(
            {
                "name": f"gpu-{i}-mig-{profile.replace('.', '-')}-{j}",
                "attributes": {
                    "type": {"string": "mig"},
                    "uuid": {"string": f"MIG-{_uuid(node, i, f'mig{j}')}"},
                    "parentUUID": {"string": parent},
                    "parentIndex": {"int": i},
                    "index": {"int": j},
                    "profile": {"string": profile},
                    "productName": {"string": gpu.product},
                    "brand": {"string": "Nvidia"},
                    "architecture": {"string": gpu.architecture},
                    "cudaComputeCapability": {"version": gpu.compute},
                    "driverVersion": {"version": DRIVER_VERSION},
                },
                "capacity": {"memory": {"value": f"{mem}Gi"}},
            }
        )
    return out


def node(name: str, group: NodeGroup) -> Obj:
    labels = {
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "type": "kwok",
        "nvidia.com/gpu.present": "true",
        "nvidia.com/gpu.product": group.gpu.label,
        "nvidia.com/gpu.count": str(group.gpus_per_node),
        "nvidia.com/mig.capable": "true" if group.gpu is not L4 else "false",
    }
    resources = {"cpu": "64", "memory": "512Gi", "pods": "110", "ephemeral-storage": "2Ti"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels, "annotations": dict(FAKE_NODE_ANNOTATION)},
        "spec": {},
        "status": {"allocatable": dict(resources), "capacity": dict(resources)},
    }


def resource_slice(name: str, group: NodeGroup) -> Obj:
    devices: list[Obj] = []
    for i in range(group.gpus_per_node):
        if group.mig:
            devices += _mig_devices(name, i, group.gpu)
        else:
            devices.append(_gpu_device(name, i, group.gpu, shareable=group.shareable))
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{name}-{DRIVER}"},
        "spec": {
            "driver": DRIVER,
            "nodeName": name,
            "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
            "devices": devices,
        },
    }


def device_classes() -> list[Obj]:
    """The DeviceClasses the NVIDIA DRA driver ships."""

    def dc(name: str, type_: str) -> Obj:
        return {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": name},
            "spec": {
                "selectors": [
                    {
                        "cel": {
                            "expression": f"device.driver == '{DRIVER}' && "
                            f"device.attributes['{DRIVER}'].type == '{type_}'"
                        }
                    }
                ]
            },
        }

    return [dc("gpu.nvidia.com", "gpu"), dc("mig.nvidia.com", "mig")]


def storage(volumes: int = 200) -> list[Obj]:
    """A StorageClass and pre-made PersistentVolumes for model volumes (no provisioner runs here)."""
    out: list[Obj] = [
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": MODEL_STORAGE_CLASS},
            "provisioner": "kubernetes.io/no-provisioner",
            "volumeBindingMode": "Immediate",
            "reclaimPolicy": "Retain",
        }
    ]
    for i in range(volumes):
        out.append(
            {
                "apiVersion": "v1",
                "kind": "PersistentVolume",
                "metadata": {"name": f"model-pv-{i:03d}", "labels": {"inference.local/pool": "models"}},
                "spec": {
                    "capacity": {"storage": "2Ti"},
                    "accessModes": ["ReadWriteMany", "ReadWriteOnce"],
                    "persistentVolumeReclaimPolicy": "Retain",
                    "storageClassName": MODEL_STORAGE_CLASS,
                    "hostPath": {"path": f"/var/lib/kwok-models/{i:03d}"},
                },
            }
        )
    return out


def fleet_objects(groups: tuple[NodeGroup, ...]) -> list[Obj]:
    objs: list[Obj] = list(device_classes())
    for group in groups:
        for n in range(group.count):
            name = f"{group.prefix}-{n}"
            objs.append(node(name, group))
            objs.append(resource_slice(name, group))
    return objs


def default_fleet() -> list[Obj]:
    """DeviceClasses, Nodes and ResourceSlices of the default fleet (no storage objects)."""
    return fleet_objects(FLEET)


def large_fleet(nodes: int) -> list[Obj]:
    """A fleet of exactly ``nodes`` nodes for benchmarks: the default mix, repeated (about 5 devices a
    node; the L4 nodes take the rounding)."""
    per = sum(g.count for g in FLEET)
    groups = []
    left = nodes
    for i, g in enumerate(FLEET):
        count = left if i == len(FLEET) - 1 else min(left, max(1, round(nodes * g.count / per)))
        left -= count
        groups.append(NodeGroup(f"{g.prefix}-x", count, g.gpu, g.gpus_per_node, g.mig, g.shareable))
    return fleet_objects(tuple(groups))


def resource_slices(objs: list[Obj]) -> list[Obj]:
    return [o for o in objs if o["kind"] == "ResourceSlice"]


def device_class_objects(objs: list[Obj]) -> list[Obj]:
    return [o for o in objs if o["kind"] == "DeviceClass"]
