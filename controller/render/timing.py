"""How long a model takes to come up, estimated from the size of its weights. Pure.

A runtime is not alive until it has read every weight from the model volume into device memory,
then compiled and captured its CUDA graphs. Probes and the Deployment's progress deadline must wait
that long, or a 70B load looks like a crash (a restart loop) or a stuck rollout (WorkloadFailed).

- load = ``STARTUP_BASE_SECONDS`` + weights / ``modelLoadMiBPerSecond`` (module setting);
- the startupProbe allows twice the load before it gives up;
- the progress deadline adds the download of the weights (``modelDownloadMiBPerSecond``) and time
  to schedule and pull the image, since the Deployment counts from the pod's creation.

The weights are taken as the model volume's size, which the planner derives from the weight files
(a slight overestimate: the volume has a margin).
"""

from __future__ import annotations

import math

from controller.config.settings import Settings
from controller.render.common import Obj
from shared import names

MIB = 2**20
STARTUP_BASE_SECONDS = 180  # CUDA and NCCL init, torch.compile, CUDA graph capture
SCHEDULE_AND_PULL_SECONDS = 600  # scheduling, claim allocation, pulling a ~10 GB runtime image
PROBE_PERIOD_SECONDS = 10
MIN_PROGRESS_DEADLINE_SECONDS = 600  # the Deployment default


def load_seconds(weight_bytes: int, settings: Settings) -> int:
    rate = max(1.0, settings.model_load_mib_per_second) * MIB
    return STARTUP_BASE_SECONDS + math.ceil(weight_bytes / rate)


def download_seconds(weight_bytes: int, settings: Settings) -> int:
    rate = max(1.0, settings.model_download_mib_per_second) * MIB
    return math.ceil(weight_bytes / rate)


def _health(period: int, failures: int) -> Obj:
    return {
        "httpGet": {"path": "/health", "port": names.RUNTIME_PORT, "scheme": "HTTPS"},
        "periodSeconds": period,
        "timeoutSeconds": 5,
        "failureThreshold": failures,
    }


def startup_probe(weight_bytes: int, settings: Settings) -> Obj:
    """Gives the runtime twice its estimated load time before the kubelet restarts it."""
    budget = 2 * load_seconds(weight_bytes, settings)
    return _health(PROBE_PERIOD_SECONDS, math.ceil(budget / PROBE_PERIOD_SECONDS))


def liveness_probe() -> Obj:
    """After start: three missed health checks in a row (30 s) restart the runtime."""
    return _health(PROBE_PERIOD_SECONDS, 3)


def readiness_probe() -> Obj:
    return _health(PROBE_PERIOD_SECONDS, 3)


def progress_deadline_seconds(weight_bytes: int, settings: Settings) -> int:
    """The Deployment's ``progressDeadlineSeconds``: schedule, download, then the startup budget."""
    total = (
        SCHEDULE_AND_PULL_SECONDS
        + download_seconds(weight_bytes, settings)
        + 2 * load_seconds(weight_bytes, settings)
    )
    return max(MIN_PROGRESS_DEADLINE_SECONDS, total)
