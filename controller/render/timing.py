"""How long a model takes to come up, estimated from the size of its weights. Pure.

A runtime is not alive until it has read every weight from the model volume into device memory,
then compiled and captured its CUDA graphs. Probes and the Deployment's progress deadline must wait
that long, or a 70B load looks like a crash (a restart loop) or a stuck rollout (WorkloadFailed).

- load = ``STARTUP_BASE_SECONDS`` + weights / ``modelLoadMiBPerSecond`` (module setting);
- the startupProbe allows twice the load before it gives up;
- the progress deadline adds the download of the weights (``modelDownloadMiBPerSecond``) and time
  to schedule and pull the image, since the Deployment counts from the pod's creation;
- a multi-node group (``controller.render.group``) waits for its pods on Ray: vLLM's
  ``multi-node-serving.sh`` gives up after ``--ray_init_timeout`` (300 s by default), while each pod
  first downloads the whole checkpoint in its own init container (833 GiB for Llama 3.1 405B, about
  4.7 hours at 50 MiB/s). One pod late by more than the timeout fails the group, and
  ``RecreateGroupOnPodRestart`` recreates it with its volumes, so everything downloads again. The
  timeout is ``RAY_SCHEDULE_SECONDS`` + the download + ``RAY_SPREAD_SECONDS``; the leader's
  startupProbe allows that wait before twice the load.

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
RAY_SCHEDULE_SECONDS = 600  # a worker scheduled and its image pulled after the leader's
RAY_SPREAD_SECONDS = 300  # vLLM's own default wait, for downloads that run slower than the others


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


def ray_init_timeout(weight_bytes: int, settings: Settings) -> int:
    """``--ray_init_timeout`` of ``multi-node-serving.sh``: how long the leader waits for its workers
    (and a worker retries the leader's head), so that a pod that starts a whole download late still joins."""
    return RAY_SCHEDULE_SECONDS + download_seconds(weight_bytes, settings) + RAY_SPREAD_SECONDS


def leader_startup_probe(weight_bytes: int, settings: Settings) -> Obj:
    """A group leader's startupProbe: the wait for its workers on Ray, then twice the load."""
    budget = ray_init_timeout(weight_bytes, settings) + 2 * load_seconds(weight_bytes, settings)
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
