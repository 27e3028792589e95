"""How the local plane is tuned: ``default`` for the tests, ``scale`` for a thousand KWOK nodes on two cores.

Pure: ``tuning(profile)`` returns the extra flags of each component. The launcher reads the profile
from ``INFERENCE_PLANE_PROFILE`` (``bench.scale`` sets ``scale``); the default profile changes nothing.

What ``scale`` changes, and why (docs/local-control-plane.md, "Large fleets"):

- kwok renews each node's Lease every quarter of ``--node-lease-duration-seconds``: 40 s gives 100
  Lease writes a second for 1,000 nodes, the largest steady load on the plane. 600 s gives 6.7.
- the node lifecycle controller marks a node ``Unknown`` when its Lease is older than
  ``--node-monitor-grace-period`` (50 s): raised to 20 minutes to match the slower renewals.
- kube-controller-manager (20 QPS) and kube-scheduler (50 QPS) throttle their own clients: 2,000
  orders make about 10 objects each for them to create or update. The limits are lifted as
  ``kwokctl --disable-qps-limits`` does.
- the HPA controller syncs every HPA every 5 s in the default profile (for the HPA tests); 2,000
  HPAs without a metrics server are 400 failed metric reads a second, so 60 s.
"""

from __future__ import annotations

from dataclasses import dataclass

PROFILES = ("default", "scale")
UNLIMITED_QPS = ("--kube-api-qps=5000", "--kube-api-burst=10000")


@dataclass(frozen=True)
class Tuning:
    profile: str
    kwok: tuple[str, ...]
    controller_manager: tuple[str, ...]
    scheduler: tuple[str, ...]


def tuning(profile: str) -> Tuning:
    if profile == "default":
        return Tuning(
            profile,
            kwok=("--node-lease-duration-seconds=40",),
            controller_manager=("--horizontal-pod-autoscaler-sync-period=5s",),
            scheduler=(),
        )
    if profile == "scale":
        return Tuning(
            profile,
            kwok=("--node-lease-duration-seconds=600",),
            controller_manager=(
                "--horizontal-pod-autoscaler-sync-period=60s",
                "--node-monitor-grace-period=20m",
                *UNLIMITED_QPS,
            ),
            scheduler=UNLIMITED_QPS,
        )
    raise ValueError(f"unknown plane profile {profile!r}; one of {', '.join(PROFILES)}")
