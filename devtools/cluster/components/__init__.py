"""The components of the local plane, one module each, all of one shape (devtools/cluster/components/base.py).

``PLANE`` is the plane's daemons in start order (``down`` stops them in reverse): etcd, the three of
Kubernetes, kwok. The add-ons started onto a running plane are cert_manager and lws. prometheus and keda
are plane daemons started only on demand (``python -m devtools.cluster up --metrics``, ``metrics-up``,
testkit/autoscaling.py): the launcher's ``start_metrics``, with their ``start(plane)``/``ready(plane)``.
Adding a component is adding a module here (and, for a daemon, an entry in ``PLANE``).
"""

from __future__ import annotations

from devtools.cluster.components.base import Daemon
from devtools.cluster.components.etcd import ETCD
from devtools.cluster.components.kube import APISERVER, CONTROLLER_MANAGER, SCHEDULER
from devtools.cluster.components.kwok import KWOK

PLANE: tuple[Daemon, ...] = (ETCD, APISERVER, CONTROLLER_MANAGER, SCHEDULER, KWOK)
